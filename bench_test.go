package nsguard

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/any"
	"github.com/coredns/coredns/plugin/file"
	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/request"

	"github.com/miekg/dns"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nsguard/nsguard/clusterdns"
)

// writeOnce is a trivial next handler: it writes one prepared answer.
type writeOnce struct{ res *dns.Msg }

func (h writeOnce) Name() string { return "next" }
func (h writeOnce) ServeDNS(_ context.Context, w dns.ResponseWriter, _ *dns.Msg) (int, error) {
	w.WriteMsg(h.res)
	return dns.RcodeSuccess, nil
}

// fixedAddr is a writer whose client address is already parsed, as a real server's is.
type fixedAddr struct {
	test.ResponseWriter
	addr net.Addr
}

func (w *fixedAddr) RemoteAddr() net.Addr { return w.addr }

func newWriter() *fixedAddr { return clientWriter(benchClients[0]) }

// clientWriter is a writer whose client is at ip.
func clientWriter(ip string) *fixedAddr {
	return &fixedAddr{addr: &net.UDPAddr{IP: net.ParseIP(ip), Port: 40212}}
}

// BenchmarkServeDNS compares nsguard with the next handler alone. The baseline goes through
// plugin.NextOrFailure, as the plugin before nsguard would call the next one without it.
func BenchmarkServeDNS(b *testing.B) {
	ctx := context.Background()
	w := newWriter()
	zones := []string{"cluster.local."}
	cases := []struct {
		name  string
		qname string
	}{
		{"out-of-zone", "my-app.corp.example."},
		{"service", "my-app.new-namespace-2.svc.cluster.local."},
		{"namespace-apex", "my-app.svc.cluster.local."},
		// <x>.<y>.<client namespace>.svc: the first search candidate of "x.y", an endpoint
		// name to cluster DNS. With a view each one is checked for a shadow.
		{"endpoint-candidate", "api.github.com.svc.cluster.local."},
	}
	v := benchView(b)
	for _, c := range cases {
		r := query(c.qname, dns.TypeA, noEDNS)
		res := reply(r, dns.RcodeSuccess)
		res.Ns = []dns.RR{test.SOA(clusterSOA)}
		next := writeOnce{res}

		b.Run("path="+c.name+"/handler=next-alone", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				plugin.NextOrFailure("previous", next, ctx, w, r)
			}
		})
		for _, mode := range []Mode{ModeLog, ModeRefuse} {
			if c.name != "namespace-apex" && mode == ModeRefuse {
				continue // the same path as log: nothing is held
			}
			for _, withView := range []bool{false, true} {
				g := New(testConfig(zones, mode, dns.RcodeNameError))
				g.Next = next
				handler := "nsguard-" + mode.String()
				if withView {
					g.view, handler = v, handler+"-view"
				}
				b.Run("path="+c.name+"/handler="+handler, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						g.ServeDNS(ctx, w, r)
					}
				})
				// With the metadata plugin in the block: its own context is made once here, as
				// the plugin makes it for every query whatever nsguard does.
				mctx, state := metadata.ContextWithMetadata(ctx), request.Request{W: w, Req: r}
				b.Run("path="+c.name+"/handler="+handler+"-metadata", func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						g.ServeDNS(g.Metadata(mctx, state), w, r)
					}
				})
			}
		}
	}
}

// benchClients are the addresses of the client Pods of benchView; newWriter's is the first.
var benchClients = []string{"10.244.1.5", "10.244.1.6", "10.244.1.7", "10.244.1.8"}

// benchView is a synced view of 200 namespaces of 5 Services, one of them headless with
// named endpoints, and the Pods that ask, each in a namespace of its own.
func benchView(b testing.TB) clusterView {
	var objs []runtime.Object
	for i := range 200 {
		ns := "bench-" + strconv.Itoa(i)
		for j := range 5 {
			objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "svc" + strconv.Itoa(j)}})
		}
		slice := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "svc0-x",
			Labels: map[string]string{discovery.LabelServiceName: "svc0"}}}
		for _, h := range []string{"svc0-0", "svc0-1"} {
			slice.Endpoints = append(slice.Endpoints, discovery.Endpoint{Hostname: &h, Addresses: []string{"10.244.9.1"}})
		}
		objs = append(objs, slice)
	}
	for k, ip := range benchClients {
		ns := "new-namespace-1"
		if k > 0 {
			ns = "team-" + strconv.Itoa(k+1)
		}
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "client"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: ip}}}})
	}
	v, _ := startView(b, true, objs...)
	return v
}

// TestPassThroughDoesNotAllocate holds the zero-allocation promise of the pass-through path:
// nsguard calls the next plugin itself, where plugin.NextOrFailure allocates a writer.
func TestPassThroughDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	w := &test.ResponseWriter{}
	for _, qname := range []string{"my-app.corp.example.", "my-app.new-namespace-2.svc.cluster.local.", "web-0.nginx.default.svc.cluster.local."} {
		r := query(qname, dns.TypeA, noEDNS)
		next := writeOnce{reply(r, dns.RcodeSuccess)}
		g := New(testConfig([]string{"cluster.local."}, ModeRefuse, dns.RcodeNameError))
		g.Next = next
		if allocs := testing.AllocsPerRun(100, func() { g.ServeDNS(ctx, w, r) }); allocs != 0 {
			t.Errorf("%s: %v allocs with nsguard, want none", qname, allocs)
		}
	}
}

// TestMayHoldMissesNothing: the quick look must never let through a name that Classify
// reads as a namespace apex, or as an endpoint that could shadow a Service when there is a view.
func TestMayHoldMissesNothing(t *testing.T) {
	zones := []string{"cluster.local.", ".", "k8s.corp.example.org."}
	names := []string{
		"my-app.svc.k8s.corp.example.org.", "web-0.nginx.shop.svc.k8s.corp.example.org.", "a.svc.corp.example.org.",
		`my-app.svc.cluster\.local.`, `my-app&x.svc.cluster.local.`, "my-app.svc.CLUSTER.LOCAL.",
		"my-app.svc.cluster.local.", "My-App.SVC.cluster.local.", "my-app.svc.", "web-0.nginx.shop.svc.cluster.local.",
		"_https._tcp.my-app.ns.svc.cluster.local.", `my\.app.svc.cluster.local.`, `a\.b.c.d.svc.cluster.local.`,
		"my-app.ns.svc.cluster.local.", "svc.cluster.local.", "cluster.local.", "x.y.z.svc.", "a.b.c.d.e.f.cluster.local.",
	}
	for _, withView := range []bool{false, true} {
		g := New(testConfig(zones, ModeLog, dns.RcodeNameError))
		if withView {
			g.view = emptyView(true)
		}
		for _, name := range names {
			n := clusterdns.Classify(name, zones)
			if heldByClassify(n, withView) && !g.mayHold(name) {
				t.Errorf("mayHold(%q) = false with view=%v, but Classify reads it as %s", name, withView, n.Shape)
			}
		}
	}
}

// BenchmarkFreshGoroutine serves each query as CoreDNS's server does, on a goroutine of its
// own whose stack starts small, through a real plugin after: file, answering from a zone. A
// plugin in front keeps its frame on that stack while file runs, so it can make the stack
// grow, and be copied, once more per query. any, which does nothing with these queries, is
// the floor; nsguard must cost no more than it.
func BenchmarkFreshGoroutine(b *testing.B) {
	zone, err := file.Parse(strings.NewReader(benchZone), "cluster.local.", "db.cluster.local", 0)
	if err != nil {
		b.Fatal(err)
	}
	next := file.File{Zones: file.Zones{Z: map[string]*file.Zone{"cluster.local.": zone}, Names: []string{"cluster.local."}}}
	g := New(testConfig([]string{"cluster.local."}, ModeLog, dns.RcodeNameError))
	g.Next = next
	g.view = emptyView(true)
	handlers := []struct {
		name string
		h    plugin.Handler
	}{
		{"file-alone", next},
		{"any", any.Any{Next: next}},
		{"nsguard", g},
	}
	for _, qname := range []string{"my-app.new-namespace-2.svc.cluster.local.", "nope.new-namespace-1.svc.cluster.local."} {
		r := query(qname, dns.TypeA, noEDNS)
		for _, h := range handlers {
			b.Run("qname="+qname+"/handler="+h.name, func(b *testing.B) {
				w := newWriter()
				done := make(chan struct{})
				b.ReportAllocs()
				for b.Loop() {
					go func() {
						plugin.NextOrFailure("previous", h.h, context.Background(), w, r)
						done <- struct{}{}
					}()
					<-done
				}
			})
		}
	}
}

const benchZone = `$ORIGIN cluster.local.
@                          30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 30
@                          30 IN NS  ns.dns.cluster.local.
ns.dns                     30 IN A   10.96.0.10
my-app.new-namespace-2.svc 30 IN A   10.96.0.20
`

// BenchmarkServeDNSParallel runs the held path on every CPU at once, each goroutine as a
// client Pod of its own (run with -cpu 2 or more). What the held path shares across CPUs
// (the limiter's lock, the counters, the view's lock) costs little on one CPU and much more
// when each write moves its cache line to another: BenchmarkServeDNS cannot show that.
func BenchmarkServeDNSParallel(b *testing.B) {
	ctx := context.Background()
	r := query("my-app.svc.cluster.local.", dns.TypeA, noEDNS)
	res := reply(r, dns.RcodeSuccess)
	res.Ns = []dns.RR{test.SOA(clusterSOA)}
	next := writeOnce{res}
	v := benchView(b)
	type handler struct {
		name string
		h    plugin.Handler
	}
	// The baseline reaches the next handler as the plugin before nsguard would.
	alone := plugin.HandlerFunc(func(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
		return plugin.NextOrFailure("previous", next, ctx, w, r)
	})
	handlers := []handler{{"next-alone", alone}}
	for _, mode := range []Mode{ModeLog, ModeRefuse} {
		g := New(testConfig([]string{"cluster.local."}, mode, dns.RcodeNameError))
		g.Next, g.view = next, v
		handlers = append(handlers, handler{"nsguard-" + mode.String() + "-view", g})
	}
	for _, h := range handlers {
		b.Run("path=namespace-apex/handler="+h.name, func(b *testing.B) {
			var clients atomic.Int32
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := clientWriter(benchClients[int(clients.Add(1)-1)%len(benchClients)])
				for pb.Next() {
					h.h.ServeDNS(ctx, w, r)
				}
			})
		})
	}
}
