package kubedns

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// Port 0 on 127.53.0.1: the resolvers tests own 127.53.0.1:53 and may run
// at the same time in another test binary.
func start(t *testing.T) string {
	t.Helper()
	s, err := Start("127.53.0.1:0")
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

func TestTrapAnswer(t *testing.T) {
	addr := start(t)
	for _, network := range []string{"udp", "tcp"} {
		// Mixed case: matching must ignore it, the echo must keep it.
		m := query(t, network, addr, "My-App.SVC.cluster.local.", dns.TypeA)
		if m.Rcode != dns.RcodeSuccess || m.Question[0].Name != "My-App.SVC.cluster.local." {
			t.Fatalf("%s: rcode %s question %v", network, dns.RcodeToString[m.Rcode], m.Question)
		}
		if len(m.Answer) != 3 {
			t.Fatalf("%s: want CNAME + 2 A, got %v", network, m.Answer)
		}
		if c, ok := m.Answer[0].(*dns.CNAME); !ok || c.Target != Target1 {
			t.Fatalf("%s: first record %v, want CNAME to %s", network, m.Answer[0], Target1)
		}
		got := map[string]string{}
		for _, rr := range m.Answer[1:] {
			got[rr.Header().Name] = rr.(*dns.A).A.String()
		}
		if got[Target1] != Target1IP || got[Target2] != Target2IP {
			t.Fatalf("%s: A records %v", network, got)
		}
	}
	// AAAA: the CNAME alone, NOERROR.
	m := query(t, "udp", addr, TrapName, dns.TypeAAAA)
	if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 || m.Answer[0].Header().Rrtype != dns.TypeCNAME {
		t.Fatalf("AAAA: %v", m)
	}
}

// kube-dns orders the answer at random; both orders must show up.
func TestTrapShuffled(t *testing.T) {
	addr := start(t)
	firsts := map[string]bool{}
	for i := 0; i < 64 && len(firsts) < 2; i++ {
		firsts[query(t, "udp", addr, TrapName, dns.TypeA).Answer[1].Header().Name] = true
	}
	if len(firsts) != 2 {
		t.Fatalf("A records never reordered: %v", firsts)
	}
}

func TestOtherNames(t *testing.T) {
	addr := start(t)
	m := query(t, "udp", addr, FixedName, dns.TypeA)
	if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != FixedIP {
		t.Fatalf("fixed service: %v", m)
	}
	m = query(t, "tcp", addr, "nope.new-namespace-1.svc.cluster.local.", dns.TypeA)
	if m.Rcode != dns.RcodeNameError || len(m.Ns) != 1 || m.Ns[0].Header().Name != Zone {
		t.Fatalf("unknown service: want NXDOMAIN with SOA %s, got %v", Zone, m)
	}
	m = query(t, "udp", addr, "svc.cluster.local.", dns.TypeA)
	if m.Rcode != dns.RcodeSuccess || len(m.Answer) != 0 || len(m.Ns) != 1 {
		t.Fatalf("svc apex: want NODATA, got %v", m)
	}
	m = query(t, "udp", addr, "my-app.corp.example.", dns.TypeA)
	if m.Rcode != dns.RcodeNameError {
		t.Fatalf("outside the zone: want NXDOMAIN, got %v", m)
	}
}

func TestBusyPort(t *testing.T) {
	addr := start(t)
	if s, err := Start(addr); err == nil {
		s.Close()
		t.Fatal("second Start on a busy port succeeded")
	}
}
