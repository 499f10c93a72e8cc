package nsguard

import (
	"context"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/internal/fixture"
)

// TestClusterAware runs nsguard with a view of the incident's cluster (see fixture.Incident).
func TestClusterAware(t *testing.T) {
	v, _ := startView(t, true, fixture.Incident()...)
	const client, stranger = "10.244.1.5", "10.244.9.9"
	tests := []struct {
		name       string
		mode       Mode
		shadowMode Mode     // endpoint_shadows
		allow      []string // allow client
		qname      string
		from       string
		upstream   string
		synced     bool
		stale      bool
		wantRcode  int      // of the answer written
		wantLine   []string // all in one line; nil: no line
		shadows    string   // endpoint_shadows_total action that rises
		skip       string   // view_skips_total reason that rises
		staleUse   bool     // view_stale_decisions_total rises
	}{
		{name: "apex names client and fix", qname: "my-app.svc.cluster.local.", from: client, upstream: "kubernetes", synced: true,
			wantRcode: dns.RcodeSuccess, wantLine: []string{
				`answer through namespace "my-app": client=10.244.1.5 pod=new-namespace-1/client question="my-app.svc.cluster.local. A"`,
				`fix="no Service my-app in new-namespace-1; Service my-app exists in legacy, new-namespace-2; use my-app.legacy, or create an ExternalName Service my-app in new-namespace-1 pointing at my-app.legacy.svc.cluster.local;`,
			}},
		{name: "apex from an unknown address", qname: "my-app.svc.cluster.local.", from: stranger, upstream: "kubernetes", synced: true,
			wantRcode: dns.RcodeSuccess, wantLine: []string{
				`client=10.244.9.9 question=`,
				`create an ExternalName Service my-app in the client's namespace pointing at my-app.legacy.svc.cluster.local`,
			}},
		{name: "apex of a name no Service has", qname: "shop.svc.cluster.local.", from: client, upstream: "kubernetes", synced: true,
			wantRcode: dns.RcodeSuccess, wantLine: []string{`fix="no Service shop exists in any namespace; if one is meant, create it;`}},
		{name: "apex refused", mode: ModeRefuse, qname: "my-app.svc.cluster.local.", from: client, upstream: "kubernetes", synced: true,
			wantRcode: dns.RcodeNameError, wantLine: []string{"pod=new-namespace-1/client", "action=refused"}},
		{name: "apex from an allowed client", mode: ModeRefuse, allow: []string{"new-namespace-1"}, qname: "my-app.svc.cluster.local.", from: client,
			upstream: "kubernetes", synced: true, wantRcode: dns.RcodeSuccess},
		{name: "apex before sync", qname: "my-app.svc.cluster.local.", from: client, upstream: "kubernetes",
			wantRcode: dns.RcodeSuccess, wantLine: []string{`client=10.244.1.5 question=`, `if my-app is a Service, ask for my-app.<its namespace>`}, skip: skipNotSynced},
		// Cut off from the API server, the view's last known state still names the client and exempts it.
		{name: "apex cut off", mode: ModeRefuse, qname: "my-app.svc.cluster.local.", from: client, upstream: "kubernetes", synced: true, stale: true,
			wantRcode: dns.RcodeNameError, wantLine: []string{`client=10.244.1.5 pod=new-namespace-1/client question=`, "action=refused",
				"Service my-app exists in legacy, new-namespace-2"}, staleUse: true},
		{name: "apex from an allowed client, cut off", mode: ModeRefuse, allow: []string{"new-namespace-1"}, qname: "my-app.svc.cluster.local.", from: client,
			upstream: "kubernetes", synced: true, stale: true, wantRcode: dns.RcodeSuccess, staleUse: true},

		{name: "shadow logged", qname: "primary.db.new-namespace-1.svc.cluster.local.", from: client, upstream: "endpoint", synced: true,
			wantRcode: dns.RcodeSuccess, shadows: actionLogged, wantLine: []string{
				`endpoint shadows a Service "primary.db": client=10.244.1.5 pod=new-namespace-1/client question="primary.db.new-namespace-1.svc.cluster.local. A"`,
				`typed="primary.db" got="endpoint primary of Service db in namespace new-namespace-1" meant="Service primary in namespace db"`,
				`action=logged fix="ask for primary.db.svc.cluster.local (or primary.db.svc)`,
			}},
		{name: "shadow mixed case", qname: "Primary.DB.new-namespace-1.svc.cluster.local.", from: client, upstream: "endpoint", synced: true,
			wantRcode: dns.RcodeSuccess, shadows: actionLogged, wantLine: []string{`typed="primary.db"`}},
		// Refusing a shadow can break a name the owner of the endpoint uses: only on request.
		{name: "shadow in mode refuse is logged", mode: ModeRefuse, qname: "primary.db.new-namespace-1.svc.cluster.local.", from: client, upstream: "endpoint", synced: true,
			wantRcode: dns.RcodeSuccess, shadows: actionLogged, wantLine: []string{"action=logged"}},
		{name: "shadow refused", mode: ModeRefuse, shadowMode: ModeRefuse, qname: "primary.db.new-namespace-1.svc.cluster.local.", from: client, upstream: "endpoint", synced: true,
			wantRcode: dns.RcodeNameError, shadows: actionRefused, wantLine: []string{"action=refused"}},
		{name: "shadow from an allowed client", mode: ModeRefuse, shadowMode: ModeRefuse, allow: []string{"new-namespace-1"}, qname: "primary.db.new-namespace-1.svc.cluster.local.",
			from: client, upstream: "endpoint", synced: true, wantRcode: dns.RcodeSuccess, shadows: actionAllowed},
		{name: "shadow that does not answer", mode: ModeRefuse, shadowMode: ModeRefuse, qname: "primary.db.new-namespace-1.svc.cluster.local.", from: client, upstream: "nxdomain",
			synced: true, wantRcode: dns.RcodeNameError},
		{name: "shadow before sync", mode: ModeRefuse, shadowMode: ModeRefuse, qname: "primary.db.new-namespace-1.svc.cluster.local.", from: client, upstream: "endpoint",
			wantRcode: dns.RcodeSuccess, skip: skipNotSynced},
		{name: "statefulset pod in its own namespace", mode: ModeRefuse, shadowMode: ModeRefuse, qname: "web-0.nginx.shop.svc.cluster.local.", from: client, upstream: "endpoint",
			synced: true, wantRcode: dns.RcodeSuccess},
		{name: "endpoint of no Service", mode: ModeRefuse, shadowMode: ModeRefuse, qname: "replica.db.new-namespace-1.svc.cluster.local.", from: client, upstream: "endpoint",
			synced: true, wantRcode: dns.RcodeSuccess},
		{name: "srv name", mode: ModeRefuse, shadowMode: ModeRefuse, qname: "_primary._tcp.db.new-namespace-1.svc.cluster.local.", from: client, upstream: "endpoint",
			synced: true, wantRcode: dns.RcodeSuccess},
	}
	buf := captureLog(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf.Reset()
			v.synced.Store(tc.synced)
			v.stale.Store(tc.stale)
			t.Cleanup(func() { v.synced.Store(true); v.stale.Store(false) })

			cfg := testConfig([]string{"cluster.local."}, tc.mode, dns.RcodeNameError)
			cfg.shadows = tc.shadowMode
			for _, ns := range tc.allow {
				cfg.allowClients[ns] = struct{}{}
			}
			g := New(cfg)
			g.view = v
			g.Next = upstreams[tc.upstream]()
			shadows := testutil.ToFloat64(endpointShadows.WithLabelValues("", "cluster.local.", "", tc.shadows, "new-namespace-1"))
			skips := testutil.ToFloat64(viewSkips.WithLabelValues("", tc.skip))
			stale := testutil.ToFloat64(viewStaleDecisions.WithLabelValues(""))

			rec := dnstest.NewRecorder(&test.ResponseWriter{RemoteIP: tc.from})
			g.ServeDNS(context.Background(), rec, query(tc.qname, dns.TypeA, noEDNS))
			if rec.Msg == nil || rec.Msg.Rcode != tc.wantRcode {
				t.Fatalf("got %v, want rcode %s", rec.Msg, dns.RcodeToString[tc.wantRcode])
			}
			logged := buf.String()
			if tc.wantLine == nil && logged != "" {
				t.Errorf("want no line, got %q", logged)
			}
			for _, w := range tc.wantLine {
				if !strings.Contains(logged, w) {
					t.Errorf("line lacks %q:\n%s", w, logged)
				}
			}
			if tc.shadows != "" {
				if got := testutil.ToFloat64(endpointShadows.WithLabelValues("", "cluster.local.", "", tc.shadows, "new-namespace-1")) - shadows; got != 1 {
					t.Errorf("endpoint_shadows_total{action=%q} rose by %v, want 1", tc.shadows, got)
				}
			}
			if got := testutil.ToFloat64(viewStaleDecisions.WithLabelValues("")) - stale; (got > 0) != tc.staleUse {
				t.Errorf("view_stale_decisions_total rose by %v, want a rise: %v", got, tc.staleUse)
			}
			if tc.skip != "" {
				if got := testutil.ToFloat64(viewSkips.WithLabelValues("", tc.skip)) - skips; got < 1 {
					t.Errorf("view_skips_total{reason=%q} did not rise", tc.skip)
				}
			}
		})
	}
}

// TestReady is false until the view has synced, and true without a view.
func TestReady(t *testing.T) {
	g := New(testConfig([]string{"cluster.local."}, ModeLog, dns.RcodeNameError))
	if !g.Ready() {
		t.Error("without a view nsguard must be ready")
	}
	v := emptyView(false)
	g.view = v
	if g.Ready() {
		t.Error("ready before the view synced")
	}
	v.synced.Store(true)
	if !g.Ready() {
		t.Error("not ready after the view synced")
	}
}

// TestEndpointNameAllocations: with a view, an endpoint name that shadows nothing costs
// one allocation, the writer that captures its answer, whether it answered (and the view was
// asked) or not.
func TestEndpointNameAllocations(t *testing.T) {
	v, _ := startView(t, true, fixture.Incident()...)
	g := New(testConfig([]string{"cluster.local."}, ModeRefuse, dns.RcodeNameError))
	g.view = v
	r := query("web-0.nginx.shop.svc.cluster.local.", dns.TypeA, noEDNS)
	answered := reply(r, dns.RcodeSuccess)
	answered.Answer = []dns.RR{test.A("web-0.nginx.shop.svc.cluster.local. 5 IN A 10.0.0.7")}
	for _, res := range []*dns.Msg{reply(r, dns.RcodeNameError), answered} {
		next := writeOnce{res}
		g.Next = next
		w := newWriter()
		alone := testing.AllocsPerRun(100, func() { next.ServeDNS(context.Background(), w, r) })
		with := testing.AllocsPerRun(100, func() { g.ServeDNS(context.Background(), w, r) })
		if with-alone > 1 {
			t.Errorf("%s: %v allocs with nsguard, %v with the next handler alone", dns.RcodeToString[res.Rcode], with, alone)
		}
	}
}

// countingView counts the view's shadow lookups.
type countingView struct {
	*forcedView
	lookups int
}

func (v *countingView) Shadowed(n clusterdns.Name) bool {
	v.lookups++
	return v.forcedView.Shadowed(n)
}

// TestShadowLookedUpOnlyWhenAnswered: an endpoint name is looked up in the view only once the
// next plugin answered it with records; the search candidates, answered NXDOMAIN or NODATA,
// shadow nothing and take no lookup in the kubernetes plugin's caches.
func TestShadowLookedUpOnlyWhenAnswered(t *testing.T) {
	fv, _ := startView(t, true, fixture.Incident()...)
	const qname = "api.github.com.svc.cluster.local."
	r := query(qname, dns.TypeA, noEDNS)
	answered := reply(r, dns.RcodeSuccess)
	answered.Answer = []dns.RR{test.A(qname + " 5 IN A 10.0.0.7")}
	tests := []struct {
		name    string
		res     *dns.Msg
		lookups int
	}{
		{"NXDOMAIN", reply(r, dns.RcodeNameError), 0},
		{"NODATA", reply(r, dns.RcodeSuccess), 0},
		{"SERVFAIL", reply(r, dns.RcodeServerFailure), 0},
		{"records", answered, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := &countingView{forcedView: fv}
			g := New(testConfig([]string{"cluster.local."}, ModeLog, dns.RcodeNameError))
			g.view, g.Next = v, writeOnce{tc.res}
			w := dnstest.NewRecorder(newWriter())
			g.ServeDNS(context.Background(), w, r)
			if v.lookups != tc.lookups {
				t.Errorf("%d shadow lookups, want %d", v.lookups, tc.lookups)
			}
			if w.Msg != tc.res {
				t.Errorf("client got %v, want the answer untouched", w.Msg)
			}
		})
	}
}
