package dnsserve

import (
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
