package dnsserve

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestCloseFreesTheAddress: the address binds again at once after Close, every time. With
// Shutdown alone the bind failed within a few thousand rounds.
func TestCloseFreesTheAddress(t *testing.T) {
	const addr = "127.53.9.1:53"
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { w.WriteMsg(new(dns.Msg).SetRcode(r, dns.RcodeNameError)) })
	for i := range 5000 {
		s, err := Start(addr, h)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		if i == 0 {
			if m, err := dns.Exchange(new(dns.Msg).SetQuestion("x.", dns.TypeA), addr); err != nil || m.Rcode != dns.RcodeNameError {
				t.Fatalf("query: %v, %v", m, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatalf("round %d: close: %v", i, err)
		}
	}
}

// TestStartBusy: a second server on a busy address fails at Start, naming the address.
func TestStartBusy(t *testing.T) {
	s, err := Start("127.53.9.2:0", dns.HandlerFunc(func(dns.ResponseWriter, *dns.Msg) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Start(s.Addr(), dns.HandlerFunc(func(dns.ResponseWriter, *dns.Msg) {})); err == nil {
		t.Fatalf("a second Start on %s succeeded", s.Addr())
	}
}

// TestStartPortZero: servers on port 0 each get a port of their own, the same over UDP and TCP,
// below the kernel's ephemeral range, where no connection's local port can take it first.
func TestStartPortZero(t *testing.T) {
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { w.WriteMsg(new(dns.Msg).SetRcode(r, dns.RcodeNameError)) })
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	ephemeral, _ := strconv.Atoi(strings.Fields(string(b))[0])
	seen := map[string]bool{}
	for range 100 {
		s, err := Start("127.53.9.3:0", h)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if seen[s.Addr()] {
			t.Fatalf("%s handed out twice", s.Addr())
		}
		seen[s.Addr()] = true
		_, port, _ := net.SplitHostPort(s.Addr())
		if p, _ := strconv.Atoi(port); p >= ephemeral {
			t.Errorf("%s: a port of the kernel's ephemeral range", s.Addr())
		}
		for _, network := range []string{"udp", "tcp"} {
			c := &dns.Client{Net: network}
			if m, _, err := c.Exchange(new(dns.Msg).SetQuestion("x.", dns.TypeA), s.Addr()); err != nil || m.Rcode != dns.RcodeNameError {
				t.Fatalf("%s over %s: %v, %v", s.Addr(), network, m, err)
			}
		}
	}
}
