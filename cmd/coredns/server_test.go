package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/coredns/coredns/test"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/test/e2e/loopback"
)

// The zone stands in for both upstreams: namespace my-app exists but holds only names
// below it, so its apex is NODATA with the SOA as the kubernetes plugin answers; namespace
// legacy answers a CNAME and an address, as kube-dns does for ExternalName Services.
const clusterZone = `$ORIGIN cluster.local.
@                              3600 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5
@                              3600 IN NS  ns.dns.cluster.local.
ns.dns                         3600 IN A   10.96.0.10
other-app-1.my-app.svc         5    IN A   192.0.2.11
legacy.svc                     5    IN CNAME other-app-1.legacy.svc.cluster.local.
other-app-1.legacy.svc         5    IN A   192.0.2.11
my-app.new-namespace-2.svc     5    IN A   10.96.0.20
`

const soaRR = "cluster.local.\t3600\tIN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5"

// TestServer runs the CoreDNS built here from a Corefile and asks it over real UDP and TCP.
func TestServer(t *testing.T) {
	zone := filepath.Join(t.TempDir(), "db.cluster.local")
	if err := os.WriteFile(zone, []byte(clusterZone), 0o644); err != nil {
		t.Fatal(err)
	}

	type answer struct {
		rcode  int
		answer []string
		ns     []string
	}
	nodata := answer{dns.RcodeSuccess, nil, []string{soaRR}}
	// The upstream's SOA, with the negative TTL of every refusal.
	refused := answer{dns.RcodeNameError, nil, []string{"cluster.local.\t5\tIN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5"}}
	// The kube-dns style answer carries no SOA, so nsguard makes the zone's.
	refusedRecords := answer{dns.RcodeNameError, nil, []string{"cluster.local.\t5\tIN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5"}}
	records := answer{dns.RcodeSuccess, []string{
		"legacy.svc.cluster.local.\t5\tIN\tCNAME\tother-app-1.legacy.svc.cluster.local.",
		"other-app-1.legacy.svc.cluster.local.\t5\tIN\tA\t192.0.2.11",
	}, []string{"cluster.local.\t3600\tIN\tNS\tns.dns.cluster.local."}}
	service := answer{dns.RcodeSuccess, []string{"my-app.new-namespace-2.svc.cluster.local.\t5\tIN\tA\t10.96.0.20"},
		[]string{"cluster.local.\t3600\tIN\tNS\tns.dns.cluster.local."}}
	nxdomain := answer{dns.RcodeNameError, nil, []string{soaRR}}

	tests := []struct {
		mode string
		want map[string]answer // question name → answer
		// counter values after one UDP and one TCP query of each name
		metrics map[string]string
	}{
		{"log", map[string]answer{
			"my-app.svc.cluster.local.":                 nodata,
			"legacy.svc.cluster.local.":                 records,
			"my-app.new-namespace-2.svc.cluster.local.": service,
			"nope.svc.cluster.local.":                   nxdomain,
		}, map[string]string{
			`answer="nodata",client_namespace="unknown",server="dns://:0",view="",zone="cluster.local."} 2`:  "logged",
			`answer="records",client_namespace="unknown",server="dns://:0",view="",zone="cluster.local."} 2`: "logged",
		}},
		{"refuse", map[string]answer{
			"my-app.svc.cluster.local.":                 refused,
			"legacy.svc.cluster.local.":                 refusedRecords,
			"my-app.new-namespace-2.svc.cluster.local.": service,
			"nope.svc.cluster.local.":                   nxdomain,
		}, map[string]string{
			`answer="nodata",client_namespace="unknown",server="dns://:0",view="",zone="cluster.local."} 2`:  "refused",
			`answer="records",client_namespace="unknown",server="dns://:0",view="",zone="cluster.local."} 2`: "refused",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			metricsAddr := freePort(t)
			corefile := fmt.Sprintf(`cluster.local:0 {
    prometheus %s
    nsguard {
        mode %s
    }
    file %s
}
`, metricsAddr, tc.mode, zone)
			srv, udp, tcp, err := test.CoreDNSServerAndPorts(corefile)
			if err != nil {
				t.Fatalf("could not start CoreDNS: %v", err)
			}
			defer srv.Stop()

			for name, want := range tc.want {
				for _, network := range []string{"udp", "tcp"} {
					addr := udp
					if network == "tcp" {
						addr = tcp
					}
					m := new(dns.Msg)
					m.SetQuestion(name, dns.TypeA)
					c := &dns.Client{Net: network}
					res, _, err := c.Exchange(m, addr)
					if err != nil {
						t.Fatalf("%s %s: %v", network, name, err)
					}
					if res.Rcode != want.rcode || !sameRRs(res.Answer, want.answer) || !sameRRs(res.Ns, want.ns) {
						t.Errorf("%s %s: got %s answer %v ns %v; want %s answer %v ns %v", network, name,
							dns.RcodeToString[res.Rcode], res.Answer, res.Ns, dns.RcodeToString[want.rcode], want.answer, want.ns)
					}
					if res.Id != m.Id || res.Question[0] != m.Question[0] {
						t.Errorf("%s %s: id or question changed: %v", network, name, res)
					}
				}
			}

			body := scrape(t, metricsAddr)
			for labels, action := range tc.metrics {
				re := `(?m)^coredns_nsguard_namespace_apex_answers_total\{action="` + action + `",` + regexp.QuoteMeta(labels) + `$`
				if !regexp.MustCompile(re).MatchString(body) {
					t.Errorf("metrics lack %s:\n%s", re, grepNSGuard(body))
				}
			}
		})
	}
}

// TestServerCacheHits: with cache in the block, as in the Corefiles clusters run, every answer
// a client gets passes nsguard, cache hits included: each is counted, and each is refused.
func TestServerCacheHits(t *testing.T) {
	zone := filepath.Join(t.TempDir(), "db.cluster.local")
	if err := os.WriteFile(zone, []byte(clusterZone), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"log", "refuse"} {
		t.Run(mode, func(t *testing.T) {
			metricsAddr := freePort(t)
			// A server label of its own: the counters are the process's, shared with TestServer.
			srv, udp, _, err := test.CoreDNSServerAndPorts(fmt.Sprintf(`cluster.local:0 {
    bind %s
    prometheus %s
    cache 30
    nsguard {
        mode %s
    }
    file %s
}
`, map[string]string{"log": "127.0.0.5", "refuse": "127.0.0.6"}[mode], metricsAddr, mode, zone))
			if err != nil {
				t.Fatalf("could not start CoreDNS: %v", err)
			}
			defer srv.Stop()
			const asks = 5
			want := map[string]int{"log": dns.RcodeSuccess, "refuse": dns.RcodeNameError}[mode]
			for range asks {
				m := new(dns.Msg)
				m.SetQuestion("my-app.svc.cluster.local.", dns.TypeA)
				res, err := dns.Exchange(m, udp)
				if err != nil {
					t.Fatal(err)
				}
				if res.Rcode != want {
					t.Errorf("got %s, want %s", dns.RcodeToString[res.Rcode], dns.RcodeToString[want])
				}
			}
			action := map[string]string{"log": "logged", "refuse": "refused"}[mode]
			re := fmt.Sprintf(`(?m)^coredns_nsguard_namespace_apex_answers_total\{action="%s",answer="nodata",[^}]*\} %d$`, action, asks)
			if body := scrape(t, metricsAddr); !regexp.MustCompile(re).MatchString(body) {
				t.Errorf("metrics lack %s: every cache hit must be counted:\n%s", re, grepNSGuard(body))
			}
		})
	}
}

func sameRRs(got []dns.RR, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i].String() != want[i] {
			return false
		}
	}
	return true
}

// freePort is a free loopback address, for TCP and UDP, that no other test process on the
// machine gets meanwhile (see package loopback).
func freePort(t *testing.T) string {
	t.Helper()
	p, err := loopback.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p[0]))
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// grepNSGuard keeps the nsguard lines of a metrics page, for error messages.
func grepNSGuard(body string) string {
	return strings.Join(regexp.MustCompile(`(?m)^coredns_nsguard.*$`).FindAllString(body, -1), "\n")
}
