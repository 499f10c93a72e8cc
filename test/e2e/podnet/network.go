package podnet

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
)

// Network is the set of pods and server addresses one test made. Safe for concurrent use.
type Network struct {
	prefix string
	pid    int

	mu      sync.Mutex
	pods    []*Pod
	addrs   []netip.Addr // on lo
	closed  bool
	byName  map[string]*Pod
	podAddr map[netip.Addr]bool
}

// podNumber numbers pods across every Network of the process, so that names never repeat.
var podNumber atomic.Int64

// New removes what dead processes left with the same prefix (up to four lower-case letters),
// then returns an empty Network. Close must be called (see CloseAll).
func New(prefix string) (*Network, error) {
	if !validPrefix.MatchString(prefix) {
		return nil, fmt.Errorf("prefix %q: want 1 to %d lower-case letters", prefix, maxPrefix)
	}
	if err := checkIP(); err != nil {
		return nil, err
	}
	if err := removeLeftovers(prefix); err != nil {
		return nil, fmt.Errorf("removing a dead run's leftovers: %w", err)
	}
	n := &Network{prefix: prefix, pid: os.Getpid(), byName: map[string]*Pod{}, podAddr: map[netip.Addr]bool{}}
	track(n)
	return n, nil
}

// AddServiceAddr puts ip on the host's lo as a /32, for a server to bind. An address that is
// already there (another run of the suite?) is an error, not shared.
func (n *Network) AddServiceAddr(ip string) error {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return fmt.Errorf("service address %q: want an IPv4 address", ip)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return errors.New("network closed")
	}
	if _, err := runIP("addr", "add", a.String()+"/32", "dev", "lo", "label", addrLabel(n.prefix, n.pid)); err != nil {
		return fmt.Errorf("%w (is another run of the suite holding it?)", err)
	}
	n.addrs = append(n.addrs, a)
	return nil
}

// Close removes every pod (its namespace, veth pair and route) and every address it added, and
// reports what it could not remove. Safe to call more than once.
func (n *Network) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	untrack(n)
	var errs []error
	for i := len(n.pods) - 1; i >= 0; i-- {
		errs = append(errs, n.pods[i].remove())
	}
	for _, a := range n.addrs {
		if _, err := runIP("addr", "del", a.String()+"/32", "dev", "lo"); err != nil {
			errs = append(errs, err)
		}
	}
	n.pods, n.addrs = nil, nil
	return errors.Join(errs...)
}
