package nsguard

import (
	"context"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/events"
	"github.com/nsguard/nsguard/internal/fixture"
)

// FuzzServeDNS sends arbitrary packed messages through nsguard in both modes, in front of
// each upstream. Whatever arrives, nsguard must not panic, and what it writes must pack.
// The seed corpus is in testdata/fuzz/FuzzServeDNS.
func FuzzServeDNS(f *testing.F) {
	for _, q := range []*dns.Msg{
		query("my-app.svc.cluster.local.", dns.TypeA, noEDNS),
		query("My-App.SVC.cluster.local.", dns.TypeAAAA, withDO),
		query("my-app.new-namespace-2.svc.cluster.local.", dns.TypeA, withEDNS),
		query("_https._tcp.my-app.ns.svc.cluster.local.", dns.TypeSRV, noEDNS),
	} {
		b, err := q.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := new(dns.Msg)
		if err := r.Unpack(data); err != nil {
			return // the server drops what does not unpack before any plugin sees it
		}
		zones := []string{"cluster.local.", "."}
		g := New(testConfig(zones, ModeLog, dns.RcodeNameError))
		g.view = emptyView(false)
		for _, q := range r.Question { // the quick look must let through every name Classify holds
			n := clusterdns.Classify(q.Name, zones)
			if heldByClassify(n, true) && !g.mayHold(q.Name) {
				t.Errorf("mayHold(%q) = false, but Classify reads it as %s", q.Name, n.Shape)
			}
			endpoint := n.Shape == clusterdns.EndpointName && heldByClassify(n, true)
			if got, ok := clusterdns.EndpointIn(q.Name, n.Zone); endpoint && (!ok || got != n) {
				t.Errorf("EndpointIn(%q) = %+v, %v, but Classify reads %+v", q.Name, got, ok, n)
			}
		}
		for _, mode := range []Mode{ModeLog, ModeRefuse} {
			serveEach(t, New(testConfig([]string{"cluster.local.", "."}, mode, dns.RcodeNameError, "legacy")), r, "")
		}
	})
}

// FuzzServeDNSWithView is FuzzServeDNS with what a cluster gives: a synced view of the
// incident's cluster, Events on, and allow client, from clients the view knows and does not.
func FuzzServeDNSWithView(f *testing.F) {
	for _, q := range []*dns.Msg{
		query("my-app.svc.cluster.local.", dns.TypeA, noEDNS),
		query("primary.db.new-namespace-1.svc.cluster.local.", dns.TypeA, withEDNS),
		query("PRIMARY.db.New-Namespace-1.svc.cluster.local.", dns.TypeAAAA, withDO),
		query("web-0.nginx.shop.svc.cluster.local.", dns.TypeSRV, noEDNS),
	} {
		b, err := q.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
	}
	v, cs := startView(f, true, fixture.Incident()...)
	clients := []string{"10.244.1.5", "10.244.1.6", "10.9.9.9", "::1"}
	var guards []*NSGuard
	for _, mode := range []Mode{ModeLog, ModeRefuse} {
		cfg := testConfig([]string{"cluster.local.", "."}, mode, dns.RcodeNameError, "legacy")
		cfg.allowClients["shop"] = struct{}{}
		if mode == ModeRefuse {
			cfg.shadows = ModeRefuse
		}
		g := New(cfg)
		g.view = v
		g.events = events.New(events.Config{Client: cs, View: v, Interval: time.Minute, Advise: g.adviseEvent, Dropped: dropEvent})
		g.podEvents = true
		g.events.Start()
		f.Cleanup(g.events.Stop)
		guards = append(guards, g)
	}
	f.Fuzz(func(t *testing.T, data []byte, from uint8) {
		r := new(dns.Msg)
		if err := r.Unpack(data); err != nil {
			return
		}
		for _, g := range guards {
			serveEach(t, g, r, clients[int(from)%len(clients)])
		}
	})
}

// fuzzUpstreams are the next plugins a fuzzed question is served in front of.
var fuzzUpstreams = []string{"kubernetes", "kube-dns", "nxdomain", "servfail written", "servfail", "silent", "truncated"}

// serveEach serves r through g in front of each fuzzUpstream, from client (empty: the test
// writer's default); whatever g writes must pack.
func serveEach(t *testing.T, g *NSGuard, r *dns.Msg, client string) {
	for _, name := range fuzzUpstreams {
		g.Next = upstreams[name]()
		rec := dnstest.NewRecorder(&test.ResponseWriter{RemoteIP: client})
		g.ServeDNS(context.Background(), rec, r.Copy())
		if rec.Msg == nil {
			continue
		}
		if _, err := rec.Msg.Pack(); err != nil {
			t.Errorf("written message does not pack: %v\n%v", err, rec.Msg)
		}
	}
}
