package coredns

import (
	"time"

	"github.com/prometheus/procfs"
)

// cpuTime reads utime+stime of pid from /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return time.Duration(st.CPUTime() * float64(time.Second)), nil
}
