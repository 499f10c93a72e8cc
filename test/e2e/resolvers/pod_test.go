//go:build e2e

package resolvers

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/test/e2e/dnsserve"
	"github.com/nsguard/nsguard/test/e2e/podnet"
)

// This test's own addresses, apart from the suite's, which may run at the same time.
const (
	podServerIP = "10.53.251.1"
	podIP       = "10.251.0.1"
	podAnswer   = "10.96.0.20"
)

// The same programs, run from inside a pod's network namespace, reach a server on a host
// address through the pod's veth, with the pod's resolv.conf; the server sees the pod's address.
func TestLookupInPod(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c, err := Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n, err := podnet.New("nsgr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := n.AddServiceAddr(podServerIP); err != nil {
		t.Fatal(err)
	}
	pod, err := n.AddPod("client", podIP)
	if err != nil {
		t.Fatal(err)
	}
	sources := serveOneName(t, "my-app.new-namespace-2.svc.cluster.local.", podAnswer)
	rc := filepath.Join(t.TempDir(), "resolv.conf")
	if err := PodResolvConf(rc, podServerIP, "new-namespace-2"); err != nil {
		t.Fatal(err)
	}
	for _, k := range Kinds {
		r, err := c.LookupInPod(ctx, pod, k, rc, "my-app")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Addrs, []string{podAnswer}) {
			t.Errorf("%v in the pod: my-app gave %+v, want %s", k, r, podAnswer)
		}
	}
	for _, src := range sources() {
		if src != podIP {
			t.Errorf("a query came from %s, not the pod's %s", src, podIP)
		}
	}
}

// serveOneName answers A for name on podServerIP:53 (UDP and TCP), NXDOMAIN for any other name, and
// returns a function that lists the source address of every query so far.
func serveOneName(t *testing.T, name, addr string) func() []string {
	t.Helper()
	var mu sync.Mutex
	var sources []string
	srv, err := dnsserve.Start(podServerIP+":53", dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		src, _, _ := net.SplitHostPort(w.RemoteAddr().String())
		mu.Lock()
		sources = append(sources, src)
		mu.Unlock()
		m := new(dns.Msg)
		m.SetReply(r)
		switch q := r.Question[0]; {
		case q.Name != name:
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeA:
			rr, _ := dns.NewRR(name + " 30 IN A " + addr)
			m.Answer = append(m.Answer, rr)
		}
		w.WriteMsg(m)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(sources)
	}
}
