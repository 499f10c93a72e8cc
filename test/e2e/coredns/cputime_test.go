package coredns

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// cpuTime agrees with the kernel's other account of the same time, getrusage, to its 10 ms
// ticks, after some work.
func TestCPUTime(t *testing.T) {
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	got, err := cpuTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	if got <= 0 || got < want-30*time.Millisecond || got > want+30*time.Millisecond {
		t.Errorf("cpuTime = %v, getrusage says %v", got, want)
	}
	if _, err := cpuTime(1 << 30); err == nil {
		t.Error("cpuTime of a pid that does not exist: no error")
	}
}
