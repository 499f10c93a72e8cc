package nsguard

import (
	"context"
	"testing"
	"unsafe"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/any"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
)

// CoreDNS serves each query on a goroutine of its own, whose stack starts small and is
// copied each time it doubles. Every plugin's frame stays on that stack while the plugins
// after it run, so a plugin that sits in front of kubernetes costs its frame on every
// query: the cost of a do-nothing plugin, any, is the floor.

// stackProbe is a next handler that records where its own frame is.
type stackProbe struct{ sp *uintptr }

func (p stackProbe) Name() string { return "probe" }

//go:noinline
func (p stackProbe) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	var here byte
	*p.sp = uintptr(unsafe.Pointer(&here))
	w.WriteMsg(r)
	return dns.RcodeSuccess, nil
}

// stackUnder returns how many bytes of stack lie between the caller of h and the next
// plugin, while the next plugin runs. The stack is grown first, so it is not moved in
// between.
//
//go:noinline
func stackUnder(h plugin.Handler, r *dns.Msg) uintptr {
	growStack(64)
	var here byte
	h.ServeDNS(context.Background(), &test.ResponseWriter{}, r)
	return uintptr(unsafe.Pointer(&here)) - probed
}

var probed uintptr

//go:noinline
func growStack(n int) byte {
	var pad [256]byte
	if n > 0 {
		return growStack(n-1) + pad[n%256]
	}
	return pad[0]
}

// TestStackFrame holds nsguard to the floor: on the path most queries take, and on the held
// path, it keeps no more stack under the plugins after it than the any plugin does.
func TestStackFrame(t *testing.T) {
	probe := stackProbe{&probed}
	floor := stackUnder(any.Any{Next: probe}, query("my-app.new-namespace-2.svc.cluster.local.", dns.TypeA, noEDNS))
	g := New(testConfig([]string{"cluster.local."}, ModeRefuse, dns.RcodeNameError))
	g.Next = probe
	g.view = emptyView(true) // with a view, as in a cluster
	tests := []struct {
		name  string
		qname string
		limit uintptr
	}{
		{"out of zone", "my-app.corp.example.", floor},
		{"service", "my-app.new-namespace-2.svc.cluster.local.", floor},
		{"endpoint that shadows nothing", "web-0.nginx.shop.svc.cluster.local.", floor},
		// Held: during an incident a fifth of the questions, each answer from the cache after
		// nsguard. It calls the next plugin itself, so it keeps no more than the floor either.
		{"namespace apex", "my-app.svc.cluster.local.", floor},
	}
	for _, tc := range tests {
		got := stackUnder(g, query(tc.qname, dns.TypeA, noEDNS))
		t.Logf("%-30s %4d bytes under the next plugin (any: %d)", tc.name, got, floor)
		if got > tc.limit {
			t.Errorf("%s: nsguard keeps %d bytes of stack under the next plugin, more than %d", tc.name, got, tc.limit)
		}
	}
}
