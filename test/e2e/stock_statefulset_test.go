//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/test/e2e/cluster"
)

// A StatefulSet's pods reach each other by the peer name: from a pod in shop, web-0.nginx and
// web-0.nginx.shop.svc.cluster.local. resolve to the endpoint web-0, in mode log and in mode
// refuse, even though a namespace nginx holds a Service web-0.
func TestStockCorefileStatefulSetPeer(t *testing.T) {
	s := newStack(t)
	const full = "web-0.nginx.shop.svc.cluster.local."
	for _, d := range distros {
		t.Run(d.name, func(t *testing.T) {
			for _, mode := range []struct{ name, line string }{{"log", guardLog}, {"refuse", guardRefuse}} {
				t.Run(mode.name, func(t *testing.T) {
					srv := s.start(t, d, d.listen(), mode.line)
					if res := s.shop.ask(t, clusterDNSIP, full, dns.TypeA); !onlyA(res, cluster.PeerPodIP) {
						t.Errorf("%s gave %v, want A %s", full, res, cluster.PeerPodIP)
					}
					s.shop.expect(t, "web-0.nginx", every(cluster.PeerPodIP))
					s.shop.expect(t, full, every(cluster.PeerPodIP))
					refuse := map[string]string{"log": "", "refuse": clusterdns.NXDomain}[mode.name]
					predicts(t, "web-0.nginx", cluster.ShopNamespace, refuse, upstreamIP+":53", every(cluster.PeerPodIP))
					predicts(t, full, cluster.ShopNamespace, refuse, upstreamIP+":53", every(cluster.PeerPodIP))
					if lines := nsguardWarnings(srv); len(lines) != 0 {
						t.Logf("nsguard logged:\n%s", strings.Join(lines, "\n"))
					}
				})
			}
		})
	}
}

// onlyA reports a NOERROR answer that is exactly one A record for ip.
func onlyA(res *dns.Msg, ip string) bool {
	if res.Rcode != dns.RcodeSuccess || len(res.Answer) != 1 {
		return false
	}
	a, ok := res.Answer[0].(*dns.A)
	return ok && a.A.String() == ip
}
