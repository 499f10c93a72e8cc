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
	// nsguard's own parts: the naming model counts for the function that called it.
	s.add(8*ms, []string{"github.com/nsguard/nsguard/clusterdns.AppendLower", "github.com/nsguard/nsguard.limitKey", "github.com/nsguard/nsguard.(*NSGuard).report"})
	s.add(9*ms, []string{"sync.(*Mutex).Lock", "github.com/nsguard/nsguard.(*logLimiter).allow", "github.com/nsguard/nsguard.(*NSGuard).report"})
	s.add(10*ms, []string{"github.com/nsguard/nsguard/clusterdns.MatchZone", "github.com/nsguard/nsguard.(*NSGuard).holds"})
	s.add(11*ms, []string{"prometheus.(*counter).Inc", "github.com/nsguard/nsguard.(*lazyCounter).add", "github.com/nsguard/nsguard.(*decision).count"})
	s.add(12*ms, []string{"strings.Count", "github.com/nsguard/nsguard.(*NSGuard).mayHold", "github.com/nsguard/nsguard.(*NSGuard).ServeDNS"})
	s.add(13*ms, []string{"github.com/nsguard/nsguard.refusal", "github.com/nsguard/nsguard.(*NSGuard).answer"})
	s.add(14*ms, []string{"runtime.mallocgc", "github.com/coredns/coredns/plugin/pkg/nonwriter.New", "github.com/nsguard/nsguard.(*NSGuard).hold"})
	s.add(15*ms, []string{"net/netip.AddrFrom4", "github.com/nsguard/nsguard.remoteIP", "github.com/nsguard/nsguard.(*NSGuard).decide"})
	var parts [nParts]float64
	parts[partQuickLook] = float64(12 * ms)
	parts[partName] = float64(10 * ms)
	parts[partClient] = float64(2*ms + 15*ms)
	parts[partCounters] = float64(11 * ms)
	parts[partLimits] = float64(8*ms + 9*ms)
	parts[partRefusal] = float64(13 * ms)
	parts[partHeld] = float64(3*ms + 14*ms)
	want := share{total: 120 * ms, stackGrowth: float64(ms), guard: float64(5*ms + 92*ms), view: float64(2 * ms), floor: float64(7 * ms), parts: parts}
	if s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	var sum float64
	for _, p := range s.parts {
		sum += p
	}
	if sum != s.guard {
		t.Errorf("the parts add up to %v, nsguard's own time is %v", sum, s.guard)
	}
}
