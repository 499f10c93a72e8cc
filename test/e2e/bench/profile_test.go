package main

import (
	"testing"
	"time"
)

// TestShareAdd sorts stacks (leaf first) the way the share table counts them.
func TestShareAdd(t *testing.T) {
	var s share
	ms := time.Millisecond
	s.add(ms, []string{"runtime.memmove", "runtime.copystack", "runtime.newstack", "github.com/nsguard/nsguard.(*NSGuard).holds"})
	s.add(2*ms, []string{"github.com/nsguard/nsguard/clusterview.(*View).Shadowed", "github.com/nsguard/nsguard.(*NSGuard).holds"})
	s.add(3*ms, []string{"github.com/nsguard/nsguard.(*NSGuard).answer"})
	// The write to the client, through the writers in front, is no plugin's own.
	s.add(4*ms, []string{"syscall.Syscall6", "github.com/miekg/dns.(*response).WriteMsg",
		"github.com/coredns/coredns/plugin/loadbalance.(*LoadBalanceResponseWriter).WriteMsg", "github.com/nsguard/nsguard.(*NSGuard).answer"})
	// The cache after nsguard is downstream, even when it writes into nsguard's writer.
	s.add(5*ms, []string{"github.com/coredns/coredns/plugin/pkg/nonwriter.(*Writer).WriteMsg",
		"github.com/coredns/coredns/plugin/cache.(*Cache).ServeDNS", "github.com/nsguard/nsguard.(*NSGuard).hold"})
	s.add(6*ms, []string{"github.com/coredns/coredns/plugin/cache.(*Cache).ServeDNS", "github.com/coredns/coredns/plugin/any.Any.ServeDNS"})
	s.add(7*ms, []string{"github.com/coredns/coredns/plugin/any.Any.ServeDNS"})
	want := share{total: 28 * ms, stackGrowth: float64(ms), guard: float64(5 * ms), view: float64(2 * ms), floor: float64(7 * ms)}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
}
