package nsguard

import (
	"context"
	"net"
	"strconv"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/cache"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
)

// apexAnswers answers as the kubernetes plugin does for a namespace apex: NOERROR, no
// records, its SOA with ttl 30.
type apexAnswers struct{}

func (apexAnswers) Name() string { return "kubernetes" }
func (apexAnswers) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	m.Ns = []dns.RR{test.SOA("cluster.local. 30 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 30")}
	w.WriteMsg(m)
	return dns.RcodeSuccess, nil
}

// BenchmarkServeDNSThroughCache is the held path as the stock Corefiles run it: nsguard in
// front of cache, which answers the namespace apexes of an incident from memory, asked by
// several client Pods in turn. The baseline is cache alone, called as the plugin before
// nsguard would call it. Every answer crosses nsguard: it names the client, counts, and
// either the log limiter holds the repeat back (mode log) or it also builds the refusal.
func BenchmarkServeDNSThroughCache(b *testing.B) {
	// As CoreDNS's server makes it for each query.
	ctx := context.WithValue(context.Background(), dnsserver.Key{}, &dnsserver.Server{Addr: "dns://:53"})
	ctx = context.WithValue(ctx, dnsserver.LoopKey{}, 0)
	v := benchView(b)
	var writers []dns.ResponseWriter
	for _, ip := range benchClients {
		writers = append(writers, &fixedAddr{addr: &net.UDPAddr{IP: net.ParseIP(ip), Port: 40212}})
	}
	var queries []*dns.Msg
	for i := range 40 { // the short names that namespaces capture, A and AAAA
		for _, t := range []uint16{dns.TypeA, dns.TypeAAAA} {
			queries = append(queries, query("bench-"+strconv.Itoa(i)+".svc.cluster.local.", t, noEDNS))
		}
	}
	// each asks the next query from the next client, all of them answered from the cache.
	each := func(b *testing.B, h plugin.Handler) {
		for _, w := range writers {
			for _, r := range queries {
				plugin.NextOrFailure("previous", h, ctx, w, r)
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			plugin.NextOrFailure("previous", h, ctx, writers[i%len(writers)], queries[i/len(writers)%len(queries)])
			i++
		}
	}
	b.Run("handler=cache-alone", func(b *testing.B) {
		c := cache.New()
		c.Next = apexAnswers{}
		each(b, c)
	})
	for _, mode := range []Mode{ModeLog, ModeRefuse} {
		b.Run("handler=nsguard-"+mode.String()+"-view", func(b *testing.B) {
			c := cache.New()
			c.Next = apexAnswers{}
			g := New(testConfig([]string{"cluster.local."}, mode, dns.RcodeNameError))
			g.Next, g.view = c, v
			each(b, g)
		})
	}
}
