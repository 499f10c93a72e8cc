//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// pod is a CoreDNS under test and the resolv.conf a pod in new-namespace-1 has for it.
type pod struct {
	dns        *coredns.Server
	resolvConf string
}

// startDNS runs CoreDNS with cfg on ip:53 for the length of the test.
func startDNS(t *testing.T, ip string, cfg coredns.Config) *pod {
	t.Helper()
	return startDNSOn(t, env.cp, ip, cfg)
}

// startDNSOn is startDNS with the kubernetes plugin reading control plane cp.
func startDNSOn(t *testing.T, cp *cluster.ControlPlane, ip string, cfg coredns.Config) *pod {
	t.Helper()
	dir := t.TempDir()
	cfg.IP, cfg.Kubeconfig, cfg.ZoneDir = ip, cp.Kubeconfig, env.zoneDir
	if cfg.Metrics == "" {
		addr, err := coredns.FreeTCPAddr()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Metrics = addr
	}
	srv, err := coredns.StartWith(t.Context(), env.coredns, dir, ip, cfg.Corefile(), cfg.Metrics, "cluster.local.", nil, cfg.Flags)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("after stop: %v", err)
		}
		if t.Failed() {
			t.Logf("--- CoreDNS log ---\n%s", srv.Log())
		}
	})
	resolvConf := filepath.Join(dir, "resolv.conf")
	if err := resolvers.PodResolvConf(resolvConf, ip, "new-namespace-1"); err != nil {
		t.Fatal(err)
	}
	return &pod{dns: srv, resolvConf: resolvConf}
}

// failed stands for a lookup that ends in an error, in the want maps.
const failed = "error"

// expect looks name up through every resolver and checks each got want[kind]: the
// addresses, space-separated and sorted, or failed.
func (p *pod) expect(t *testing.T, name string, want map[resolvers.Kind]string) {
	t.Helper()
	for _, kind := range resolvers.Kinds {
		res, err := env.clients.Lookup(t.Context(), kind, p.resolvConf, name)
		if err != nil {
			t.Fatalf("%s lookup of %s: %v", kind, name, err)
		}
		got := strings.Join(res.Addrs, " ")
		if !res.OK() {
			got = failed
		}
		if got != want[kind] {
			t.Errorf("%s looking up %q got %q (%s), want %q", kind, name, got, res.Err, want[kind])
		}
	}
}

// every is the same want for every resolver.
func every(want string) map[resolvers.Kind]string {
	m := map[resolvers.Kind]string{}
	for _, k := range resolvers.Kinds {
		m[k] = want
	}
	return m
}

// ask sends one question straight to the server, as dig would.
func (p *pod) ask(t *testing.T, name string, qtype uint16) *dns.Msg {
	t.Helper()
	res, err := resolvers.Query(t.Context(), p.dns.IP+":53", name, qtype)
	if err != nil {
		t.Fatalf("query %s: %v", name, err)
	}
	return res
}

// waitRcode polls name until the server answers rcode, for changes that reach CoreDNS
// through a watch or a reload.
func (p *pod) waitRcode(t *testing.T, name string, qtype uint16, rcode int) *dns.Msg {
	t.Helper()
	var res *dns.Msg
	var err error
	if werr := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		res, err = resolvers.Query(ctx, p.dns.IP+":53", name, qtype)
		return err == nil && res.Rcode == rcode, nil
	}); werr != nil {
		t.Fatalf("%s %s never answered %s: last %v, %v", name, dns.TypeToString[qtype], dns.RcodeToString[rcode], res, err)
	}
	return res
}

// nsguardLines are nsguard's log lines so far.
func (p *pod) nsguardLines() []string {
	var lines []string
	for _, l := range strings.Split(p.dns.Log(), "\n") {
		if strings.Contains(l, "[WARNING] plugin/nsguard: ") {
			lines = append(lines, l)
		}
	}
	return lines
}

// scrape returns srv's /metrics page.
func scrape(t *testing.T, srv *coredns.Server) string {
	t.Helper()
	body, err := srv.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	return body
}

const apexMetric = "coredns_nsguard_namespace_apex_answers_total"

// apexAnswers sums the namespace apex counter on the real /metrics page by action/answer.
func (p *pod) apexAnswers(t *testing.T) map[string]float64 {
	t.Helper()
	return coredns.SumBy(scrape(t, p.dns), apexMetric, "action", "answer")
}

// isNoData reports an answer that is NOERROR with no records and the zone's SOA.
func isNoData(m *dns.Msg) bool {
	return m.Rcode == dns.RcodeSuccess && len(m.Answer) == 0 && len(m.Ns) == 1 && m.Ns[0].Header().Rrtype == dns.TypeSOA
}

// isNXDomain reports an NXDOMAIN that carries the zone's SOA for negative caching.
func isNXDomain(m *dns.Msg) bool {
	return m.Rcode == dns.RcodeNameError && len(m.Answer) == 0 &&
		slices.ContainsFunc(m.Ns, func(rr dns.RR) bool { return rr.Header().Rrtype == dns.TypeSOA })
}
