package nsguard

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/request"

	"github.com/miekg/dns"
)

// TestMetadata: for a query nsguard holds, the values the metadata plugin hands log and dnstap
// say what it decided, once the answer is written; for any other query it publishes nothing.
func TestMetadata(t *testing.T) {
	labels := []string{labelAction, labelKind, labelTyped, labelClientPod, labelClientNamespace}
	tests := []struct {
		name     string
		qname    string
		mode     Mode
		allow    []string
		upstream string
		view     bool
		want     []string // in the order of labels; nil: no label set at all
	}{
		{name: "logged", qname: "my-app.svc.cluster.local.", mode: ModeLog, upstream: "kubernetes",
			want: []string{"logged", "namespace", "my-app", "", ""}},
		{name: "refused", qname: "My-App.svc.cluster.local.", mode: ModeRefuse, upstream: "kube-dns",
			want: []string{"refused", "namespace", "my-app", "", ""}},
		{name: "allowed", qname: "my-app.svc.cluster.local.", mode: ModeRefuse, allow: []string{"my-app"}, upstream: "kube-dns",
			want: []string{"allowed", "namespace", "my-app", "", ""}},
		{name: "client pod", qname: "my-app.svc.cluster.local.", mode: ModeLog, upstream: "kubernetes", view: true,
			want: []string{"logged", "namespace", "my-app", "client", "new-namespace-1"}},
		// Passes the quick look, but nothing is held: the labels are there and empty.
		{name: "nxdomain", qname: "my-app.svc.cluster.local.", mode: ModeLog, upstream: "nxdomain",
			want: []string{"", "", "", "", ""}},
		{name: "service", qname: "my-app.new-namespace-2.svc.cluster.local.", mode: ModeRefuse, upstream: "kube-dns"},
		{name: "out of zone", qname: "my-app.corp.example.", mode: ModeRefuse, upstream: "kube-dns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := New(testConfig([]string{"cluster.local."}, tc.mode, dns.RcodeNameError, tc.allow...))
			if tc.view {
				g.view = benchView(t)
			}
			g.Next = upstreams[tc.upstream]()
			r := query(tc.qname, dns.TypeA, noEDNS)
			w := newWriter()
			ctx := g.Metadata(metadata.ContextWithMetadata(context.Background()), request.Request{W: w, Req: r})
			// Before the answer, nothing is decided.
			for _, l := range metadata.Labels(ctx) {
				if v := metadata.ValueFunc(ctx, l)(); v != "" {
					t.Errorf("%s = %q before the answer", l, v)
				}
			}
			if _, err := g.ServeDNS(ctx, w, r); err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if got := metadata.Labels(ctx); len(got) != 0 {
					t.Errorf("labels %v for a query nsguard does not hold", got)
				}
				return
			}
			for i, l := range labels {
				f := metadata.ValueFunc(ctx, l)
				if f == nil {
					t.Errorf("no %s", l)
					continue
				}
				if got := f(); got != tc.want[i] {
					t.Errorf("%s = %q, want %q", l, got, tc.want[i])
				}
			}
		})
	}
}

// TestMetadataCostsNothingUnheld: with the metadata plugin in the block, a query nsguard does
// not hold allocates nothing more.
func TestMetadataCostsNothingUnheld(t *testing.T) {
	w := &test.ResponseWriter{}
	ctx := metadata.ContextWithMetadata(context.Background())
	for _, qname := range []string{"my-app.corp.example.", "my-app.new-namespace-2.svc.cluster.local.", "_https._tcp.my-app.ns.svc.cluster.local."} {
		r := query(qname, dns.TypeA, noEDNS)
		g := New(testConfig([]string{"cluster.local."}, ModeRefuse, dns.RcodeNameError))
		g.Next = writeOnce{reply(r, dns.RcodeSuccess)}
		state := request.Request{W: w, Req: r}
		if allocs := testing.AllocsPerRun(100, func() { g.ServeDNS(g.Metadata(ctx, state), w, r) }); allocs != 0 {
			t.Errorf("%s: %v allocs with metadata, want none", qname, allocs)
		}
	}
	// With a view, a search candidate shaped as an endpoint name costs what it costs without
	// the metadata plugin: it shadows nothing, so nothing is published.
	r := query("api.github.com.svc.cluster.local.", dns.TypeA, noEDNS)
	g := New(testConfig([]string{"cluster.local."}, ModeLog, dns.RcodeNameError))
	g.Next, g.view = writeOnce{reply(r, dns.RcodeSuccess)}, benchView(t)
	state := request.Request{W: w, Req: r}
	without := testing.AllocsPerRun(100, func() { g.ServeDNS(context.Background(), w, r) })
	if with := testing.AllocsPerRun(100, func() { g.ServeDNS(g.Metadata(ctx, state), w, r) }); with != without {
		t.Errorf("endpoint candidate: %v allocs with metadata, %v without", with, without)
	}
}
