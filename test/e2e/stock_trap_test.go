//go:build e2e

package e2e

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/test/e2e/cluster"
)

// The trap through every stock Corefile with one nsguard line added, as a user would add it.
// For NodeLocal DNSCache, nsguard sits in the node-local cache's cluster.local block (it has no
// kubernetes plugin): there it guards the block's own zone, and only there are pod addresses
// seen (the central CoreDNS sees the node's).
func TestStockCorefileTrap(t *testing.T) {
	s := newStack(t)
	for _, d := range distros {
		t.Run(d.name, func(t *testing.T) {
			// (a) A bare nsguard line catches the trap: a pod in new-namespace-1 looks up my-app.
			t.Run("log", func(t *testing.T) {
				srv := s.start(t, d, d.listen(), guardLog)
				before := apexCounts(t, srv)["logged"]
				s.web.expect(t, "my-app", trapped)
				predicts(t, "my-app", cluster.ClientNamespace, "", upstreamIP+":53", trapped)
				waitGuardLine(t, srv, `answer through namespace "my-app"`, "action=logged", "client="+cluster.WebPodIP)
				counted := apexCounts(t, srv)["logged"] - before
				t.Logf("%s, mode log: %v namespace apex answers counted for one pod's lookups (glibc, musl, Go, c-ares)", d.name, counted)
				if counted < 1 {
					t.Errorf("coredns_nsguard_namespace_apex_answers_total{action=\"logged\"} rose by %v, want at least 1", counted)
				}
			})
			// (b) Two pods in different namespaces ask within the cache TTL (30 s): the second
			// answer comes from cache, and is logged and counted all the same.
			t.Run("log-two-clients", func(t *testing.T) {
				srv := s.start(t, d, d.listen(), guardLog)
				c0, h0 := apexCounts(t, srv)["logged"], cacheHits(t, srv)
				for _, c := range []*client{s.web, s.probe} {
					if res := c.ask(t, clusterDNSIP, apex, dns.TypeA); !isNoData(res) {
						t.Errorf("%s got %v for the namespace apex, want NODATA", c.pod.Name, res)
					}
					c1, h1 := apexCounts(t, srv)["logged"], cacheHits(t, srv)
					t.Logf("%s, mode log: %s's question counted %v (cache hits %v)", d.name, c.pod.Name, c1-c0, h1-h0)
					if c1 < c0+1 {
						t.Errorf("the counter did not rise for %s (%v, then %v): nsguard did not see the answer", c.pod.Name, c0, c1)
					}
					// kubeadm's Corefile alone keeps cluster.local out of the cache.
					if c == s.probe && d.name != "kubeadm" && h1 < h0+1 {
						t.Errorf("%s's answer did not come from the cache (hits %v, then %v): the test misses its point", c.pod.Name, h0, h1)
					}
					c0, h0 = c1, h1
					waitGuardLine(t, srv, `answer through namespace "my-app"`, "action=logged", "client="+c.pod.IP.String())
				}
			})
			// (c) mode refuse, allow client kube-system: decided per client, whoever asks first.
			for _, first := range []string{"kube-system", "new-namespace-1"} {
				t.Run("refuse-"+first+"-first", func(t *testing.T) {
					srv := s.start(t, d, d.listen(), guardRefuse)
					order := []*client{s.probe, s.web}
					if first == "new-namespace-1" {
						order = []*client{s.web, s.probe}
					}
					for _, c := range order {
						res := c.ask(t, clusterDNSIP, apex, dns.TypeA)
						switch c {
						case s.probe:
							if !isNoData(res) {
								t.Errorf("kube-system's answer is %v, want the NODATA (it is allowed)", res)
							}
						case s.web:
							if !isNXDomain(res) {
								t.Errorf("new-namespace-1's answer is %v, want NXDOMAIN with the zone's SOA", res)
							}
						}
					}
					s.web.expect(t, "my-app", every(corp)) // musl too goes on to my-app.corp.example
					s.probe.expect(t, "my-app", trapped)   // allowed: the trap as without nsguard
					predicts(t, "my-app", cluster.ClientNamespace, clusterdns.NXDomain, upstreamIP+":53", every(corp))
					predicts(t, "my-app", cluster.ProbeNamespace, "", upstreamIP+":53", trapped)
					t.Logf("%s, mode refuse, %s first: apex answers counted %v", d.name, first, apexCounts(t, srv))
				})
			}
		})
	}
}
