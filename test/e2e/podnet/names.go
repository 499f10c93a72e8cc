package podnet

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"syscall"
)

// Names must fit IFNAMSIZ, 15 bytes: "lo:" + prefix + PID (up to 7 digits) for an address
// label, prefix + PID + "-" + a pod number for a veth. A 4-letter prefix leaves 3 digits.
const (
	maxPrefix   = 4
	maxLinkName = 15
)

var validPrefix = regexp.MustCompile(`^[a-z]{1,4}$`)

// linkName is the name of pod n's host-side veth and of its network namespace.
func linkName(prefix string, pid, n int) string { return fmt.Sprintf("%s%d-%d", prefix, pid, n) }

// addrLabel marks the addresses a process put on lo.
func addrLabel(prefix string, pid int) string { return fmt.Sprintf("lo:%s%d", prefix, pid) }

// ownerPID reads the process ID out of a name this package made with prefix, or 0.
func ownerPID(prefix, name string) int {
	m := regexp.MustCompile(`^(?:lo:)?` + regexp.QuoteMeta(prefix) + `(\d+)(?:-\d+)?$`).FindStringSubmatch(name)
	if m == nil {
		return 0
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil {
		return 0
	}
	return pid
}

// alive reports whether process pid exists. A PID reused since is taken as alive: leaving a
// leftover is better than removing another run's network.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
