package nsguard

import (
	"context"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/nonwriter"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
	ot "github.com/opentracing/opentracing-go"
	"github.com/opentracing/opentracing-go/mocktracer"
)

// writerProbe is a next plugin that answers, and keeps the writer it was given.
type writerProbe struct{ got *dns.ResponseWriter }

func (p writerProbe) Name() string { return "upstream" }

func (p writerProbe) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	*p.got = w
	m := reply(r, dns.RcodeSuccess)
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// TestCallsNext: nsguard calls the next plugin itself, on the writer it was given or its
// capturing writer, unless plugin.NextOrFailure has work to do there: a metrics recorder to
// tell which plugin wrote, or a trace span to open a child of.
func TestCallsNext(t *testing.T) {
	tracer := mocktracer.New()
	spanned := ot.ContextWithSpan(context.Background(), tracer.StartSpan("servedns"))
	tests := []struct {
		name     string
		qname    string
		traced   bool
		ctx      context.Context
		recorder bool
		direct   bool // the next plugin gets nsguard's writer, not one of NextOrFailure's
	}{
		{"pass-through", "my-app.new-namespace-2.svc.cluster.local.", false, context.Background(), false, true},
		{"pass-through, trace plugin, no span", "my-app.new-namespace-2.svc.cluster.local.", true, context.Background(), false, true},
		{"pass-through, span", "my-app.new-namespace-2.svc.cluster.local.", true, spanned, false, false},
		{"pass-through, metrics recorder", "my-app.new-namespace-2.svc.cluster.local.", false, context.Background(), true, false},
		{"held", "my-app.svc.cluster.local.", false, context.Background(), false, true},
		{"held, span", "my-app.svc.cluster.local.", true, spanned, false, false},
		// Nothing reaches the recorder through the capturing writer: no need to tell it.
		{"held, metrics recorder", "my-app.svc.cluster.local.", false, context.Background(), true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got dns.ResponseWriter
			g := New(testConfig([]string{"cluster.local."}, ModeLog, dns.RcodeNameError))
			g.Next, g.traced = writerProbe{&got}, tc.traced
			var w dns.ResponseWriter = &test.ResponseWriter{}
			rec := metrics.NewRecorder(w)
			if tc.recorder {
				w = rec
			}
			if _, err := g.ServeDNS(tc.ctx, w, query(tc.qname, dns.TypeA, noEDNS)); err != nil {
				t.Fatal(err)
			}
			_, captured := got.(*nonwriter.Writer)
			if direct := got == w || captured; direct != tc.direct {
				t.Errorf("the next plugin got writer %T; direct %v, want %v", got, direct, tc.direct)
			}
			if tc.recorder && !captured && rec.Plugin != "upstream" {
				t.Errorf("the metrics recorder says plugin %q wrote, want upstream", rec.Plugin)
			}
		})
	}
}

// traceStub stands in for the trace plugin, by name.
type traceStub struct{ plugin.Handler }

func (traceStub) Name() string { return "trace" }

// TestStartFindsTrace: only a server block with the trace plugin makes nsguard look for spans.
func TestStartFindsTrace(t *testing.T) {
	for _, traced := range []bool{false, true} {
		cfg := testConfig([]string{"cluster.local."}, ModeLog, dns.RcodeNameError)
		g := New(cfg)
		conf := &dnsserver.Config{Zone: "cluster.local.", Port: "53"}
		if traced {
			conf.Plugin = append(conf.Plugin, func(next plugin.Handler) plugin.Handler { return traceStub{next} })
		}
		conf.Plugin = append(conf.Plugin, func(next plugin.Handler) plugin.Handler { g.Next = next; return g })
		if _, err := dnsserver.NewServer("dns://:53", []*dnsserver.Config{conf}); err != nil {
			t.Fatal(err)
		}
		if err := g.start(conf, []string{"cluster.local:53"}, cfg, nil); err != nil {
			t.Fatal(err)
		}
		if err := g.stop(); err != nil {
			t.Fatal(err)
		}
		if g.traced != traced {
			t.Errorf("with the trace plugin %v: traced %v", traced, g.traced)
		}
	}
}
