package loopback

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortsDistinct: the ports are distinct, and free again once chosen. Ports picked one
// by one and released at once repeat among 200 more often than not.
func TestFreePortsDistinct(t *testing.T) {
	ports, err := FreePorts(200)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d given twice", p)
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
