// Package loopback picks free ports on 127.0.0.1 for the processes the tests start.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A port handed out is bound only later, by a process the test starts. Two things could take
// it meanwhile: the kernel, which gives any connect() or bind to port 0 on the machine a port
// of its ephemeral range (net.ipv4.ip_local_port_range), and another test process choosing
// too (go test runs packages in parallel, and other suites run beside). So ports come from
// below the ephemeral range, which the kernel never hands out by itself, and each is claimed
// with a lock on a file of its own, which the other test processes respect and the kernel
// drops when this process exits.

// lowest is the bottom of the range ports are drawn from: above the well-known and most
// registered services' ports.
const lowest = 20000

var (
	mu      sync.Mutex
	claimed = map[int]*os.File{} // held for the life of the process
	lockDir = filepath.Join(os.TempDir(), "nsguard-loopback-ports")
)

// FreePorts returns n distinct ports, free on 127.0.0.1 over TCP and UDP, that no other
// caller on this machine gets until this process exits.
func FreePorts(n int) ([]int, error) {
	lo, hi, err := portRange()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(lockDir, 0o777); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	ports := make([]int, 0, n)
	start := lo + rand.IntN(hi-lo)
	for i := 0; i < hi-lo && len(ports) < n; i++ {
		p := lo + (start-lo+i)%(hi-lo)
		if ok, err := claim(p); err != nil {
			return nil, err
		} else if ok {
			ports = append(ports, p)
		}
	}
	if len(ports) < n {
		return nil, fmt.Errorf("only %d of %d free ports in %d-%d on 127.0.0.1", len(ports), n, lo, hi-1)
	}
	return ports, nil
}

// portRange is [lowest, the kernel's first ephemeral port).
func portRange() (lo, hi int, err error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("ip_local_port_range: %q", b)
	}
	if hi, err = strconv.Atoi(f[0]); err != nil {
		return 0, 0, fmt.Errorf("ip_local_port_range: %q", b)
	}
	if hi-lowest < 1000 {
		return 0, 0, fmt.Errorf("the kernel's ephemeral ports start at %d: fewer than 1000 ports below it from %d", hi, lowest)
	}
	return lowest, hi, nil
}

// claim takes port p if no process claimed it and nothing is bound to it.
func claim(p int) (bool, error) {
	if claimed[p] != nil {
		return false, nil
	}
	f, err := os.OpenFile(filepath.Join(lockDir, strconv.Itoa(p)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil // another process's
		}
		return false, err
	}
	if !bindable(p) {
		f.Close()
		return false, nil
	}
	claimed[p] = f
	return true, nil
}

// bindable reports whether p binds on 127.0.0.1 over TCP and over UDP.
func bindable(p int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	u.Close()
	return true
}
