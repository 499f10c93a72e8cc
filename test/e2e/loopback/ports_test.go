package loopback

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestFreePortsDistinct: the ports are distinct, below the kernel's ephemeral range, and free
// once chosen. Ports picked one by one and released at once repeat among 200 more often than not.
func TestFreePortsDistinct(t *testing.T) {
	_, ephemeral, err := portRange()
	if err != nil {
		t.Fatal(err)
	}
	ports, err := FreePorts(200)
	if err != nil {
		t.Fatal(err)
	}
	more, err := FreePorts(200) // a second call hands out none of the first's
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range append(ports, more...) {
		if seen[p] {
			t.Fatalf("port %d given twice", p)
		}
		if p < lowest || p >= ephemeral {
			t.Errorf("port %d outside %d-%d: the kernel may hand it to any connect()", p, lowest, ephemeral-1)
		}
		seen[p] = true
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("%s is not free after the choice: %v", addr, err)
	}
	l.Close()
}

// TestFreePortsClaimedAcrossProcesses: another process, as a test package running in parallel
// is, gets none of the ports this one holds, though they are free to bind.
func TestFreePortsClaimedAcrossProcesses(t *testing.T) {
	if ports := os.Getenv("LOOPBACK_TRY_CLAIM"); ports != "" {
		got := 0
		for _, s := range strings.Split(ports, ",") {
			p, _ := strconv.Atoi(s)
			if ok, err := claim(p); err != nil {
				t.Fatal(err)
			} else if ok {
				got++
			}
		}
		if got != 0 {
			t.Fatalf("claimed %d ports another process holds", got)
		}
		return
	}
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, p := range ports {
		list = append(list, strconv.Itoa(p))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFreePortsClaimedAcrossProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOOPBACK_TRY_CLAIM="+strings.Join(list, ","))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the other process: %v\n%s", err, out)
	}
	// And once this process lets go (a test process exits), the other one may have them.
	mu.Lock()
	f := claimed[ports[0]]
	delete(claimed, ports[0])
	mu.Unlock()
	f.Close()
	if ok, err := claim(ports[0]); err != nil || !ok {
		t.Errorf("port %d not claimable once let go: %v", ports[0], err)
	}
}
