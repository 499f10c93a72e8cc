package coredns

import (
	"net"
	"testing"
)

// TestFreeTCPAddrsDistinct: a server's endpoints get ports of their own, and the ports are
// free again once chosen. Ports picked one by one and released at once would repeat among
// 200 (the kernel draws them at random from its ephemeral range) more often than not.
func TestFreeTCPAddrsDistinct(t *testing.T) {
	addrs, err := FreeTCPAddrs(200)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, a := range addrs {
		if seen[a] {
			t.Fatalf("%s given twice", a)
		}
		seen[a] = true
	}
	l, err := net.Listen("tcp", addrs[0])
	if err != nil {
		t.Fatalf("%s is not free after the choice: %v", addrs[0], err)
	}
	l.Close()
}
