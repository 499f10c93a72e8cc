package nsguard

import (
	"context"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// apexUpstream answers every question as the kubernetes plugin behind cache answers a
// namespace apex: NOERROR, no records, its SOA with ttl; and counts the questions it got.
type apexUpstream struct {
	calls   int
	ttl     uint32
	rcode   int
	records bool
	opt     bool
}

func (u *apexUpstream) Name() string { return "cache" }

func (u *apexUpstream) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	u.calls++
	m := new(dns.Msg)
	m.SetRcode(r, u.rcode)
	m.Authoritative, m.RecursionAvailable = true, true
	soa := test.SOA(clusterSOA)
	soa.Hdr.Ttl = u.ttl
	m.Ns = []dns.RR{soa}
	if u.records {
		m.Answer = []dns.RR{test.CNAME(r.Question[0].Name + " 30 IN CNAME login.example.com.")}
		m.Answer[0].Header().Ttl = u.ttl
		m.Ns = nil
	}
	if u.opt {
		m.SetEdns0(1232, false)
	}
	w.WriteMsg(m)
	return u.rcode, nil
}

// TestRefusalRemembered: in mode refuse a question refused once is refused again, within the
// answer's TTL and the refusal's, without asking the plugins after nsguard; anything that
// could make the next refusal differ is decided on the answer itself.
func TestRefusalRemembered(t *testing.T) {
	const apex = "my-app.svc.cluster.local."
	tests := []struct {
		name    string
		mode    Mode
		up      apexUpstream
		allow   string // 'allow client'
		allowNS string // 'allow namespace'
		second  *dns.Msg
		wait    time.Duration
		calls   int // questions the next plugin got, of two
	}{
		{"repeat", ModeRefuse, apexUpstream{ttl: 30}, "", "", query(apex, dns.TypeA, noEDNS), 0, 1},
		{"repeat in other case, with EDNS", ModeRefuse, apexUpstream{ttl: 30}, "", "", query("My-App.svc.Cluster.Local.", dns.TypeA, withDO), 0, 1},
		{"records", ModeRefuse, apexUpstream{ttl: 30, records: true}, "", "", query(apex, dns.TypeA, noEDNS), 0, 1},
		{"records, after their TTL", ModeRefuse, apexUpstream{ttl: 2, records: true}, "", "", query(apex, dns.TypeA, noEDNS), 2 * time.Second, 2},
		{"other type", ModeRefuse, apexUpstream{ttl: 30}, "", "", query(apex, dns.TypeAAAA, noEDNS), 0, 2},
		{"other name", ModeRefuse, apexUpstream{ttl: 30}, "", "", query("my-db.svc.cluster.local.", dns.TypeA, noEDNS), 0, 2},
		{"after the refusal's TTL", ModeRefuse, apexUpstream{ttl: 30}, "", "", query(apex, dns.TypeA, noEDNS), negativeTTL * time.Second, 2},
		{"after the answer's TTL", ModeRefuse, apexUpstream{ttl: 2}, "", "", query(apex, dns.TypeA, noEDNS), 2 * time.Second, 2},
		{"within the answer's TTL", ModeRefuse, apexUpstream{ttl: 2}, "", "", query(apex, dns.TypeA, noEDNS), 1999 * time.Millisecond, 1},
		{"answer of TTL 0", ModeRefuse, apexUpstream{ttl: 0}, "", "", query(apex, dns.TypeA, noEDNS), 0, 2},
		{"answer with an OPT", ModeRefuse, apexUpstream{ttl: 30, opt: true}, "", "", query(apex, dns.TypeA, noEDNS), 0, 2},
		{"error, not refused", ModeRefuse, apexUpstream{ttl: 30, rcode: dns.RcodeServerFailure}, "", "", query(apex, dns.TypeA, noEDNS), 0, 2},
		{"allow client", ModeRefuse, apexUpstream{ttl: 30}, "team-a", "", query(apex, dns.TypeA, noEDNS), 0, 2},
		{"allow namespace", ModeRefuse, apexUpstream{ttl: 30}, "", "my-app", query(apex, dns.TypeA, noEDNS), 0, 2},
		{"mode log", ModeLog, apexUpstream{ttl: 30}, "", "", query(apex, dns.TypeA, noEDNS), 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig([]string{"cluster.local."}, tc.mode, dns.RcodeNameError)
			if tc.allowNS != "" {
				cfg.allowNamespaces[tc.allowNS] = struct{}{}
			}
			if tc.allow != "" {
				cfg.allowClients[tc.allow] = struct{}{}
			}
			g := New(cfg)
			up := tc.up
			g.Next = &up
			var now time.Duration
			if g.memo != nil {
				g.memo.clock = func() time.Duration { return now }
			}
			first := dnstest.NewRecorder(&test.ResponseWriter{})
			g.ServeDNS(context.Background(), first, query(apex, dns.TypeA, noEDNS))
			now += tc.wait

			// The refusal the answer itself makes, beside the remembered one.
			fresh := New(cfg)
			fresh.Next = &apexUpstream{ttl: tc.up.ttl, rcode: tc.up.rcode, records: tc.up.records, opt: tc.up.opt}
			want := dnstest.NewRecorder(&test.ResponseWriter{})
			fresh.ServeDNS(context.Background(), want, tc.second.Copy())

			got := dnstest.NewRecorder(&test.ResponseWriter{})
			code, err := g.ServeDNS(context.Background(), got, tc.second)
			if err != nil {
				t.Fatal(err)
			}
			if up.calls != tc.calls {
				t.Errorf("the next plugin got %d questions, want %d", up.calls, tc.calls)
			}
			if code != want.Rcode {
				t.Errorf("returned rcode %d, want %d", code, want.Rcode)
			}
			// Other than the SOA's TTL, which counts down in cache, the same message.
			if got.Msg == nil || want.Msg == nil {
				t.Fatalf("written %v, want %v", got.Msg, want.Msg)
			}
			if got.Msg.String() != want.Msg.String() {
				t.Errorf("written\n%v\nwant, as the answer makes it,\n%v", got.Msg, want.Msg)
			}
		})
	}
}

// TestRefusalRememberedCounted: a remembered refusal is counted and held to the log limits
// as any other.
func TestRefusalRememberedCounted(t *testing.T) {
	const apex = "counted-app.svc.cluster.local."
	g := New(testConfig([]string{"cluster.local."}, ModeRefuse, dns.RcodeNameError))
	up := &apexUpstream{ttl: 30}
	g.Next = up
	before := apexCount("cluster.local.", answerNoData, actionRefused)
	repeats := testutil.ToFloat64(logLinesSuppressed.WithLabelValues("", reasonRepeat))
	for range 3 {
		g.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), query(apex, dns.TypeA, noEDNS))
	}
	if up.calls != 1 {
		t.Errorf("the next plugin got %d questions, want 1", up.calls)
	}
	if got := apexCount("cluster.local.", answerNoData, actionRefused) - before; got != 3 {
		t.Errorf("counted %v refused answers, want 3", got)
	}
	if got := testutil.ToFloat64(logLinesSuppressed.WithLabelValues("", reasonRepeat)) - repeats; got != 2 {
		t.Errorf("counted %v repeats held back, want 2", got)
	}
}

// TestRefusalRememberedNotRenewed: a refusal made on a remembered answer does not keep it
// longer; the answer is asked for again once the first refusal's TTL has passed.
func TestRefusalRememberedNotRenewed(t *testing.T) {
	g := New(testConfig([]string{"cluster.local."}, ModeRefuse, dns.RcodeNameError))
	up := &apexUpstream{ttl: 30}
	g.Next = up
	var now time.Duration
	g.memo.clock = func() time.Duration { return now }
	for _, at := range []time.Duration{0, 4 * time.Second, 4900 * time.Millisecond, negativeTTL * time.Second} {
		now = at
		g.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), query("renewed.svc.cluster.local.", dns.TypeA, noEDNS))
	}
	if up.calls != 2 {
		t.Errorf("the next plugin got %d questions, want 2: at 0 and at %ds", up.calls, negativeTTL)
	}
}
