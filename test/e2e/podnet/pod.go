package podnet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Pod is one client pod's network namespace. Its eth0 holds the pod's address as a /32 and a
// default route; the host reaches the address through the other end of the veth pair.
type Pod struct {
	Name string     // as given to AddPod, for messages
	IP   netip.Addr // the pod's address

	netns string // network namespace name, also the host-side veth's name
}

// AddPod makes a network namespace for a pod with address ip (IPv4), wires it to the host and
// returns it. The address must not be in use by another pod of any Network.
func (n *Network) AddPod(name, ip string) (*Pod, error) {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return nil, fmt.Errorf("pod %s address %q: want an IPv4 address", name, ip)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, errors.New("network closed")
	}
	if n.byName[name] != nil || n.podAddr[a] {
		return nil, fmt.Errorf("pod %s at %s: name or address taken in this network", name, a)
	}
	p := &Pod{Name: name, IP: a, netns: linkName(n.prefix, n.pid, int(podNumber.Add(1)))}
	if len(p.netns) > maxLinkName {
		return nil, fmt.Errorf("pod %s: link name %s is too long for Linux", name, p.netns)
	}
	// Recorded first, so that Close removes whatever part of it was made.
	n.pods = append(n.pods, p)
	n.byName[name], n.podAddr[a] = p, true
	if err := p.create(); err != nil {
		return nil, fmt.Errorf("pod %s: %w", name, err)
	}
	return p, nil
}

// create makes the namespace and the veth pair, and routes the pod's /32 both ways.
func (p *Pod) create() error {
	host, addr := p.netns, p.IP.String()
	steps := [][]string{
		{"netns", "add", p.netns},
		{"link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", p.netns},
		{"-n", p.netns, "link", "set", "lo", "up"},
		{"-n", p.netns, "addr", "add", addr + "/32", "dev", "eth0"},
		{"-n", p.netns, "link", "set", "eth0", "up"},
		// No gateway: the host answers ARP for its own addresses, lo's /32s among them.
		{"-n", p.netns, "route", "add", "default", "dev", "eth0"},
		{"link", "set", host, "up"},
	}
	for _, s := range steps {
		if _, err := runIP(s...); err != nil {
			return err
		}
	}
	if _, err := runIP("route", "add", addr+"/32", "dev", host); err != nil {
		return fmt.Errorf("%w (is another run of the suite routing %s?)", err, addr)
	}
	return nil
}

// remove deletes the host-side veth (which takes its peer and the route with it) and the
// namespace. What is already gone is not an error.
func (p *Pod) remove() error {
	var errs []error
	if linkExists(p.netns) {
		if _, err := runIP("link", "del", p.netns); err != nil {
			errs = append(errs, err)
		}
	}
	if netnsExists(p.netns) {
		if _, err := runIP("netns", "del", p.netns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Netns is the path of the pod's network namespace, for setns(2).
func (p *Pod) Netns() string { return filepath.Join("/run/netns", p.netns) }

// Command returns argv to be run inside the pod's network namespace (ip netns exec). It runs
// in its own process group, which ctx's end kills, and dies with the test binary.
func (p *Pod) Command(ctx context.Context, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", p.netns}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

func linkExists(name string) bool {
	_, err := runIP("link", "show", "dev", name)
	return err == nil
}

func netnsExists(name string) bool {
	var list []struct {
		Name string `json:"name"`
	}
	if err := ipJSON(&list, "netns", "list"); err != nil {
		return true // cannot tell: try to delete it
	}
	for _, ns := range list {
		if ns.Name == name {
			return true
		}
	}
	return false
}
