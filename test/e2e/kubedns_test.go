//go:build e2e

package e2e

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/kubedns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// lookups is how often each resolver looks my-app up through kube-dns: its answers are
// random, and glibc fails on roughly one in five, so this many shows every outcome.
const lookups = 60

// startKubeDNS runs the kube-dns stand-in on ip:53, answering from the real API server's
// objects, with a CoreDNS beside it as its upstream for names outside the cluster.
func startKubeDNS(t *testing.T, ip, upstreamIP string) *kubedns.Server {
	t.Helper()
	c, err := model.LoadLive(t.Context(), env.cp.Clientset())
	if err != nil {
		t.Fatal(err)
	}
	up := startDNS(t, upstreamIP, coredns.Config{})
	s, err := kubedns.Start(ip+":53", c, up.dns.IP+":53")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// tally looks name up lookups times with every resolver, through resolvConf, and counts
// what each got: an address, or failed.
func tally(t *testing.T, resolvConf, name string) map[resolvers.Kind]map[string]int {
	t.Helper()
	out := map[resolvers.Kind]map[string]int{}
	for _, kind := range resolvers.Kinds {
		out[kind] = map[string]int{}
		for range lookups {
			res, err := env.clients.Lookup(t.Context(), kind, resolvConf, name)
			if err != nil {
				t.Fatalf("%s lookup of %s: %v", kind, name, err)
			}
			got := strings.Join(res.Addrs, " ")
			if !res.OK() {
				got = failed
			}
			out[kind][got]++
		}
	}
	return out
}

// The incident as it was: kube-dns answers my-app.svc.cluster.local with one CNAME, to one
// of namespace my-app's ExternalName targets at random, and both targets' addresses in
// random order. musl and Go take both wrong addresses; glibc takes one of them, or fails
// when the target's address comes before the CNAME. Behind nsguard in mode refuse, no
// lookup reaches a wrong app.
func TestIncidentKubeDNS(t *testing.T) {
	both := cluster.OtherApp1IP + " " + cluster.OtherApp2IP
	t.Run("without nsguard", func(t *testing.T) {
		legacy := startKubeDNS(t, "127.53.1.100", "127.53.1.101")
		resolvConf := t.TempDir() + "/resolv.conf"
		if err := resolvers.PodResolvConf(resolvConf, strings.Split(legacy.Addr(), ":")[0], cluster.ClientNamespace); err != nil {
			t.Fatal(err)
		}
		got := tally(t, resolvConf, "my-app")
		t.Logf("%d lookups of my-app each through kube-dns: %v", lookups, got)
		for _, kind := range []resolvers.Kind{resolvers.Musl, resolvers.Go} {
			if got[kind][both] != lookups {
				t.Errorf("%s got %v, want both wrong addresses every time", kind, got[kind])
			}
		}
		g := got[resolvers.Glibc]
		if g[cluster.OtherApp1IP] == 0 || g[cluster.OtherApp2IP] == 0 || g[failed] == 0 || g[cluster.OtherApp1IP]+g[cluster.OtherApp2IP]+g[failed] != lookups {
			t.Errorf("glibc got %v, want each wrong address and some failures, nothing else", g)
		}
		// c-ares 1.18 takes the target's address when it follows the CNAME; else it reads the
		// answer as NODATA and goes on, to my-app.corp.example.
		a := got[resolvers.CAres]
		if a[cluster.OtherApp1IP] == 0 || a[cluster.OtherApp2IP] == 0 || a[corp] == 0 || a[cluster.OtherApp1IP]+a[cluster.OtherApp2IP]+a[corp] != lookups {
			t.Errorf("c-ares got %v, want each wrong address and some of %s, nothing else", a, corp)
		}
		// Each resolver got every outcome explain allows, and nothing else.
		for kind, want := range kubeDNSPredicts(t, "my-app", cluster.ClientNamespace, legacy.Addr()) {
			if keys := slices.Sorted(maps.Keys(got[kind])); !slices.Equal(keys, want) {
				t.Errorf("%s got %v through kube-dns; explain allows %q", kind, got[kind], want)
			}
		}
	})
	t.Run("nsguard refuses", func(t *testing.T) {
		legacy := startKubeDNS(t, "127.53.1.102", "127.53.1.103")
		// A node-local CoreDNS forwarding cluster.local to kube-dns, without cache: every
		// lookup meets kube-dns's randomness.
		p := startDNS(t, "127.53.1.5", coredns.Config{NSGuard: "nsguard {\n        mode refuse\n    }", Forward: legacy.Addr()})
		got := tally(t, p.resolvConf, "my-app")
		for _, kind := range resolvers.Kinds {
			if got[kind][corp] != lookups {
				t.Errorf("%s got %v, want %s (the next search domain) every time", kind, got[kind], corp)
			}
		}
		if n := p.apexAnswers(t)["refused/records"]; n < lookups {
			t.Errorf("refused/records counter is %v, want every kube-dns apex answer", n)
		}
	})
	t.Run("nsguard refuses behind a cache", func(t *testing.T) {
		legacy := startKubeDNS(t, "127.53.1.104", "127.53.1.105")
		p := startDNS(t, "127.53.1.70", coredns.Config{Before: []string{"cache 30"}, NSGuard: "nsguard {\n        mode refuse\n    }", Forward: legacy.Addr()})
		for range 2 { // the second time from cache
			p.expect(t, "my-app", every(corp))
		}
	})
}

// explain and audit predict, record by record, what kube-dns answers the incident's names.
func TestExplainAgreesWithKubeDNS(t *testing.T) {
	c, err := model.LoadLive(t.Context(), env.cp.Clientset())
	if err != nil {
		t.Fatal(err)
	}
	legacy := startKubeDNS(t, "127.53.1.106", "127.53.1.107")
	for _, name := range []string{cluster.AppService, cluster.AppService + "." + cluster.AppNamespace, cluster.OtherApp1 + "." + cluster.LegacyNamespace} {
		e := model.Explain(c, name, cluster.ClientNamespace, model.ExplainOptions{})
		for _, cand := range e.Candidates {
			if cand.KubeDNS.Rcode == clusterdns.Upstream {
				continue
			}
			for range 20 { // the answer varies: each must be one the prediction allows
				res, err := resolvers.Query(t.Context(), legacy.Addr(), cand.Name, dns.TypeA)
				if err != nil {
					t.Fatal(err)
				}
				if msg := agrees(cand.KubeDNS, res); msg != "" {
					t.Fatalf("%s: kube-dns answered %v; explain says %s: %s", cand.Name, res, cand.KubeDNS, msg)
				}
			}
		}
	}
}

// agrees says how res differs from the predicted answer a, or "".
func agrees(a clusterdns.Answer, res *dns.Msg) string {
	if dns.RcodeToString[res.Rcode] != a.Rcode {
		return "rcode " + dns.RcodeToString[res.Rcode]
	}
	var got, cnames []string
	for _, rr := range res.Answer {
		h := rr.Header()
		if c, ok := rr.(*dns.CNAME); ok {
			cnames = append(cnames, c.Target)
			continue
		}
		got = append(got, strings.ToLower(h.Name)+" "+dns.TypeToString[h.Rrtype]+" "+strings.TrimPrefix(rr.String(), h.String()))
	}
	var want []string
	for _, r := range a.Records {
		if r.Type == clusterdns.TypeCNAME {
			if !slices.Contains(cnames, r.Data) {
				return "no CNAME to " + r.Data
			}
			continue
		}
		want = append(want, r.String())
	}
	if len(a.CNAMEOneOf) > 0 && (len(cnames) != 1 || !slices.Contains(a.CNAMEOneOf, cnames[0])) {
		return "CNAMEs " + strings.Join(cnames, ", ")
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return "records " + strings.Join(got, "; ")
	}
	return ""
}
