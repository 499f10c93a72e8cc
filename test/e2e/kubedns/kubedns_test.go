package kubedns

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/test/e2e/dnsserve"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// The incident as the real kube-dns was observed answering it.
const (
	apex    = "my-app.svc.cluster.local."
	target1 = "other-app-1.legacy-a.svc.cluster.local."
	target2 = "other-app-2.legacy-a.svc.cluster.local."
	ip1     = "10.96.0.31"
	ip2     = "10.96.0.32"
	soaText = "cluster.local.\t60\tIN\tSOA\tns.dns.cluster.local. hostmaster.cluster.local. %d 28800 7200 604800 60"
)

func load(t *testing.T, files ...string) *model.Cluster {
	t.Helper()
	c, err := model.LoadFiles(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var incident = []string{"../../../audit/testdata/incident.yaml"}

// Port 0 on 127.53.0.1: the resolvers tests own 127.53.0.1:53 and may run
// at the same time in another test binary.
func start(t *testing.T, c *model.Cluster, upstream string) string {
	t.Helper()
	s, err := Start("127.53.0.1:0", c, upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.Addr()
}

func query(t *testing.T, network, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q := resolvers.Query
	if network == "tcp" {
		q = resolvers.QueryTCP
	}
	m, err := q(ctx, addr, name, qtype)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	return m
}

// The namespace apex: one CNAME, to either target at random, with both targets' A records,
// in random order, AA and TTL 30, no SOA.
func TestApexAnswer(t *testing.T) {
	addr := start(t, load(t, incident...), "")
	cnameTo, cnameFirst := map[string]int{}, 0
	const n = 200
	for i := range n {
		network := []string{"udp", "tcp"}[i%2]
		// Mixed case: matching must ignore it, the echo must keep it.
		m := query(t, network, addr, "My-App.SVC.cluster.local.", dns.TypeA)
		if m.Rcode != dns.RcodeSuccess || !m.Authoritative || m.Question[0].Name != "My-App.SVC.cluster.local." || len(m.Ns) != 0 {
			t.Fatalf("%s: %v", network, m)
		}
		var cnames []string
		addrs := map[string]string{}
		for j, rr := range m.Answer {
			if rr.Header().Ttl != ttl {
				t.Fatalf("TTL %d, want %d: %v", rr.Header().Ttl, ttl, rr)
			}
			switch v := rr.(type) {
			case *dns.CNAME:
				cnames = append(cnames, v.Target)
				if v.Hdr.Name != "My-App.SVC.cluster.local." {
					t.Fatalf("CNAME owner %q", v.Hdr.Name)
				}
				if j == 0 {
					cnameFirst++
				}
			case *dns.A:
				addrs[v.Hdr.Name] = v.A.String()
			}
		}
		if len(m.Answer) != 3 || len(cnames) != 1 || addrs[target1] != ip1 || addrs[target2] != ip2 {
			t.Fatalf("want one CNAME and both targets' A records, got %v", m.Answer)
		}
		cnameTo[cnames[0]]++
	}
	t.Logf("%d answers: CNAME to %v, CNAME first in %d", n, cnameTo, cnameFirst)
	if cnameTo[target1] == 0 || cnameTo[target2] == 0 {
		t.Errorf("the CNAME never changed target: %v", cnameTo)
	}
	if cnameFirst == 0 || cnameFirst == n {
		t.Errorf("the CNAME came first in %d of %d answers: the order never changed", cnameFirst, n)
	}
}

func TestAnswers(t *testing.T) {
	addr := start(t, load(t, incident...), "")
	serial := time.Now().Truncate(time.Hour).Unix()
	tests := []struct {
		name     string
		qtype    uint16
		rcode    int
		aa       bool
		answer   []string // sorted, as dig prints them
		extra    []string
		negative bool // kube-dns's SOA in the authority section
	}{
		{apex, dns.TypeSRV, dns.RcodeSuccess, true, []string{
			apex + "\t30\tIN\tSRV\t10 50 0 " + target1, apex + "\t30\tIN\tSRV\t10 50 0 " + target2,
		}, []string{target1 + "\t30\tIN\tA\t" + ip1, target2 + "\t30\tIN\tA\t" + ip2}, false},
		{apex, dns.TypeAAAA, dns.RcodeSuccess, true, nil, nil, true},
		{apex, dns.TypeTXT, dns.RcodeSuccess, true, nil, nil, true},
		{apex, dns.TypeCNAME, dns.RcodeNameError, false, nil, nil, true},
		{"other-app-1.my-app.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, true, []string{
			"other-app-1.my-app.svc.cluster.local.\t30\tIN\tCNAME\t" + target1, target1 + "\t30\tIN\tA\t" + ip1,
		}, nil, false},
		{"my-app.new-namespace-2.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, true, []string{
			"my-app.new-namespace-2.svc.cluster.local.\t30\tIN\tA\t10.96.0.20"}, nil, false},
		{"my-app.new-namespace-1.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, false, nil, nil, true},
		{"svc.cluster.local.", dns.TypeA, dns.RcodeNameError, false, nil, nil, true},
		{"cluster.local.", dns.TypeA, dns.RcodeNameError, false, nil, nil, true},
		{"empty-ns.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, false, nil, nil, true},
		{"legacy-a.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, false, nil, nil, true},
		{"nope.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, false, nil, nil, true},
		{"my-app.cluster.local.", dns.TypeA, dns.RcodeNameError, false, nil, nil, true},
	}
	for _, tc := range tests {
		m := query(t, "udp", addr, tc.name, tc.qtype)
		what := tc.name + " " + dns.TypeToString[tc.qtype]
		if m.Rcode != tc.rcode || m.Authoritative != tc.aa {
			t.Errorf("%s: %s aa=%v, want %s aa=%v", what, dns.RcodeToString[m.Rcode], m.Authoritative, dns.RcodeToString[tc.rcode], tc.aa)
		}
		// The CNAME of an alias comes first; the rest may come in any order.
		if got := strs(m.Answer); !slices.Equal(sorted(got), sorted(tc.answer)) || len(got) > 0 && got[0] != tc.answer[0] && tc.qtype != dns.TypeSRV {
			t.Errorf("%s: answer %q, want %q", what, got, tc.answer)
		}
		if got := strs(m.Extra); !slices.Equal(sorted(got), sorted(tc.extra)) {
			t.Errorf("%s: additional %q, want %q", what, got, tc.extra)
		}
		if want := []string{fmtSOA(serial)}; tc.negative != (len(m.Ns) > 0) || tc.negative && !slices.Equal(strs(m.Ns), want) {
			t.Errorf("%s: authority %q, want SOA %v", what, strs(m.Ns), tc.negative)
		}
	}
}

// ExternalName targets outside the cluster go to the upstream: when they do not resolve the
// apex is NODATA with no CNAME at all; when they do, A gets a CNAME and both addresses,
// AAAA the CNAME alone.
func TestExternalTargets(t *testing.T) {
	c := model.NewCluster()
	for _, n := range []string{"other-app-1", "other-app-2"} {
		c.AddService(model.Service{Namespace: "my-app", Name: n, Type: "ExternalName", ExternalName: n + ".example.net"})
	}
	resolving := upstream(t, map[string]string{"other-app-1.example.net.": "192.0.2.11", "other-app-2.example.net.": "192.0.2.12"})
	m := query(t, "udp", start(t, c, upstream(t, nil)), apex, dns.TypeA)
	if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 0 || len(m.Ns) != 1 {
		t.Errorf("targets that do not resolve: %v, want NODATA", m)
	}
	addr := start(t, c, resolving)
	m = query(t, "udp", addr, apex, dns.TypeA)
	if got := sorted(types(m.Answer)); !slices.Equal(got, []string{"A", "A", "CNAME"}) {
		t.Errorf("targets that resolve, A: %v, want a CNAME and two A", m.Answer)
	}
	m = query(t, "udp", addr, apex, dns.TypeAAAA)
	if got := types(m.Answer); !slices.Equal(got, []string{"CNAME"}) {
		t.Errorf("targets that resolve, AAAA: %v, want the CNAME alone", m.Answer)
	}
}

// After the blog's fix the first candidate answers, and so does new-namespace-1's own apex.
func TestAfterBlogFix(t *testing.T) {
	addr := start(t, load(t, append(incident, "../../../audit/testdata/blog-fix.yaml")...), "")
	for _, name := range []string{"my-app.new-namespace-1.svc.cluster.local.", "new-namespace-1.svc.cluster.local."} {
		m := query(t, "udp", addr, name, dns.TypeA)
		want := []string{name + "\t30\tIN\tCNAME\tmy-app.new-namespace-2.svc.cluster.local.", "my-app.new-namespace-2.svc.cluster.local.\t30\tIN\tA\t10.96.0.20"}
		if got := strs(m.Answer); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func TestBusyPort(t *testing.T) {
	addr := start(t, load(t, incident...), "")
	if s, err := Start(addr, model.NewCluster(), ""); err == nil {
		s.Close()
		t.Fatal("second Start on a busy port succeeded")
	}
}

// upstream runs a DNS server that answers the A records of addrs, NOERROR with no records
// for their other types, and NXDOMAIN for the rest.
func upstream(t *testing.T, addrs map[string]string) string {
	t.Helper()
	srv, err := dnsserve.Start("127.0.0.1:0", dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		ip, ok := addrs[r.Question[0].Name]
		switch {
		case !ok:
			m.Rcode = dns.RcodeNameError
		case r.Question[0].Qtype == dns.TypeA:
			rr, _ := dns.NewRR(r.Question[0].Name + " 60 IN A " + ip)
			m.Answer = []dns.RR{rr}
		}
		w.WriteMsg(m)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Addr()
}

func strs(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, rr.String())
	}
	return out
}

func types(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		out = append(out, dns.TypeToString[rr.Header().Rrtype])
	}
	return out
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func fmtSOA(serial int64) string { return fmt.Sprintf(soaText, serial) }
