package nsguard

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
	ot "github.com/opentracing/opentracing-go"
	"github.com/opentracing/opentracing-go/mocktracer"
)

// TestHeldTraceSpan: the held path calls the next plugin itself only when no trace is open;
// under the trace plugin, the next plugin still gets its child span, as it does through
// plugin.NextOrFailure on every other path.
func TestHeldTraceSpan(t *testing.T) {
	for _, qname := range []string{"my-app.svc.cluster.local.", "my-app.new-namespace-2.svc.cluster.local."} {
		for _, mode := range []Mode{ModeLog, ModeRefuse} {
			tracer := mocktracer.New()
			root := tracer.StartSpan("servedns")
			ctx := ot.ContextWithSpan(context.Background(), root)
			g := New(testConfig([]string{"cluster.local."}, mode, dns.RcodeNameError))
			g.Next = upstreams["kubernetes"]()
			rec := dnstest.NewRecorder(&test.ResponseWriter{})
			if _, err := g.ServeDNS(ctx, rec, query(qname, dns.TypeA, noEDNS)); err != nil {
				t.Fatal(err)
			}
			if rec.Msg == nil {
				t.Fatalf("%s, mode %s: no answer written", qname, mode)
			}
			spans := tracer.FinishedSpans()
			if len(spans) != 1 || spans[0].OperationName != "upstream" || spans[0].ParentID != root.Context().(mocktracer.MockSpanContext).SpanID {
				t.Errorf("%s, mode %s: finished spans %v, want one child span of the next plugin, upstream", qname, mode, spans)
			}
		}
	}
}
