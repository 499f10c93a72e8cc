//go:build e2e

package podnet

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Addresses of this package's own test, apart from the suite's, which may run at the same time.
const (
	testPrefix = "nsgt"
	serverIP   = "10.53.250.1"
	podA, podB = "10.250.0.1", "10.250.0.2"
)

// withServer is a fresh pod network with serverIP on lo, closed when t ends.
func withServer(t *testing.T) *Network {
	t.Helper()
	n, err := New(testPrefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := n.AddServiceAddr(serverIP); err != nil {
		t.Fatal(err)
	}
	return n
}

// Each pod's packets reach a server on lo from the pod's own address, over UDP and TCP, and a
// command run in the pod sees the pod's interface; Close leaves nothing behind.
func TestPodsHaveTheirOwnAddress(t *testing.T) {
	n := withServer(t)
	a, err := n.AddPod("a", podA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.AddPod("b", podB)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.AddPod("c", podA); err == nil {
		t.Error("a second pod with the same address was accepted")
	}

	udp, tcp := echoSource(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, p := range []*Pod{a, b} {
		for network, addr := range map[string]string{"udp": udp, "tcp": tcp} {
			c, err := p.Dial(ctx, network, addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write([]byte("who\n")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 64)
			k, err := c.Read(buf)
			c.Close()
			if err != nil {
				t.Fatalf("%s from pod %s: %v", network, p.Name, err)
			}
			if got := string(buf[:k]); got != p.IP.String() {
				t.Errorf("%s from pod %s arrived from %s, want %s", network, p.Name, got, p.IP)
			}
		}
		out, err := p.Command(ctx, "ip", "-4", "-o", "addr", "show", "dev", "eth0").Output()
		if err != nil || !bytes.Contains(out, []byte(p.IP.String()+"/32")) {
			t.Errorf("eth0 in pod %s: %v %s", p.Name, err, out)
		}
	}

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if left := ours(t, testPrefix); left != "" {
		t.Errorf("left after Close:\n%s", left)
	}
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A dead process's namespace, veth and lo address are removed by the next New; a live one's are kept.
func TestNewRemovesDeadRunsLeftovers(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	pid := dead.Process.Pid
	ns := linkName(testPrefix, pid, 1)
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"link", "add", ns, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"addr", "add", serverIP + "/32", "dev", "lo", "label", addrLabel(testPrefix, pid)},
	} {
		if _, err := runIP(args...); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { // in case New did not
		runIP("link", "del", ns)
		runIP("netns", "del", ns)
		runIP("addr", "del", serverIP+"/32", "dev", "lo")
	})
	n, err := New(testPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if left := ours(t, testPrefix+strconv.Itoa(pid)); left != "" {
		t.Errorf("a dead run's leftovers survived New:\n%s", left)
	}
}

// echoSource serves UDP and TCP on serverIP and answers each message with the sender's address.
func echoSource(t *testing.T) (udpAddr, tcpAddr string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", serverIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", serverIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close(); l.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo([]byte(from.(*net.UDPAddr).IP.String()), from)
		}
	}()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 64)
			c.Read(buf)
			c.Write([]byte(c.RemoteAddr().(*net.TCPAddr).IP.String()))
			c.Close()
		}
	}()
	return pc.LocalAddr().String(), l.Addr().String()
}

// ours lists links, namespaces and lo address labels whose names start with prefix.
func ours(t *testing.T, prefix string) string {
	t.Helper()
	var found []string
	for _, args := range [][]string{{"-o", "link", "show"}, {"netns", "list"}, {"-o", "addr", "show", "dev", "lo"}} {
		out, err := runIP(args...)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			for _, f := range strings.Fields(l) {
				if strings.HasPrefix(strings.TrimPrefix(f, "lo:"), prefix) {
					found = append(found, l)
					break
				}
			}
		}
	}
	return strings.Join(found, "\n")
}

// Dial leaves every thread in the host's network namespace and ends none: a child started with
// Pdeathsig from a thread that ended would be killed.
func TestDialLeavesThreadsAlone(t *testing.T) {
	n := withServer(t)
	p, err := n.AddPod("a", podA)
	if err != nil {
		t.Fatal(err)
	}
	udp, _ := echoSource(t)
	before := threads(t)
	for range 200 {
		c, err := p.Dial(t.Context(), "udp", udp)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	after := threads(t)
	for tid := range before {
		if _, ok := after[tid]; !ok {
			t.Errorf("thread %s ended during the dials", tid)
		}
	}
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for tid, ns := range after {
		if ns != host {
			t.Errorf("thread %s is in %s, not the host's %s", tid, ns, host)
		}
	}
}

// threads maps each thread of this process to its network namespace.
func threads(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range paths {
		if ns, err := os.Readlink(p); err == nil {
			out[filepath.Base(filepath.Dir(filepath.Dir(p)))] = ns
		}
	}
	return out
}
