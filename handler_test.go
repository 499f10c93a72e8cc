package nsguard

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nsguard/nsguard/clusterdns"
)

type edns uint8

const (
	noEDNS edns = iota
	withEDNS
	withDO
)

func query(name string, qtype uint16, e edns) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.Id = 4242
	if e != noEDNS {
		m.SetEdns0(1232, e == withDO)
	}
	return m
}

func TestServeDNS(t *testing.T) {
	tests := []struct {
		name     string
		zones    []string
		allow    []string
		qname    string
		qtype    uint16
		edns     edns
		upstream string
		held     bool   // a refuse mode answers in place of the upstream
		answer   string // answer label, for held and allowed rows
		allowed  bool
	}{
		{name: "kubernetes nodata", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, upstream: "kubernetes", held: true, answer: answerNoData},
		{name: "kubernetes nodata AAAA", qname: "my-app.svc.cluster.local.", qtype: dns.TypeAAAA, upstream: "kubernetes", held: true, answer: answerNoData},
		{name: "kube-dns records", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, upstream: "kube-dns", held: true, answer: answerRecords},
		{name: "kube-dns nodata AAAA", qname: "my-app.svc.cluster.local.", qtype: dns.TypeAAAA, upstream: "kube-dns nodata", held: true, answer: answerNoData},
		{name: "mixed case", qname: "My-App.SVC.Cluster.Local.", qtype: dns.TypeA, upstream: "kube-dns", held: true, answer: answerRecords},
		{name: "edns0", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, edns: withEDNS, upstream: "kubernetes", held: true, answer: answerNoData},
		{name: "edns0 do", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, edns: withDO, upstream: "kube-dns", held: true, answer: answerRecords},
		{name: "edns0 option", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, edns: withEDNS, upstream: "kubernetes nsid", held: true, answer: answerNoData},
		{name: "edns0 do nodata", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, edns: withDO, upstream: "kubernetes", held: true, answer: answerNoData},
		{name: "second zone", zones: []string{"cluster.local.", "example.org."}, qname: "my-app.svc.example.org.", qtype: dns.TypeA, upstream: "kube-dns", held: true, answer: answerRecords},
		{name: "longest zone", zones: []string{"local.", "cluster.local."}, qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, upstream: "kubernetes", held: true, answer: answerNoData},
		{name: "other namespace allowed", allow: []string{"legacy"}, qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, upstream: "kubernetes", held: true, answer: answerNoData},

		{name: "allowed", allow: []string{"my-app"}, qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, upstream: "kube-dns", allowed: true, answer: answerRecords},
		{name: "allowed mixed case", allow: []string{"my-app"}, qname: "MY-APP.svc.cluster.local.", qtype: dns.TypeA, upstream: "kubernetes", allowed: true, answer: answerNoData},

		{name: "nxdomain", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, upstream: "nxdomain"},
		{name: "servfail written", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, upstream: "servfail written"},
		{name: "servfail not written", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, upstream: "servfail"},
		{name: "nothing written", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, upstream: "silent"},
		{name: "truncated", qname: "my-app.svc.cluster.local.", qtype: dns.TypeA, edns: withEDNS, upstream: "truncated"},

		{name: "service", qname: "my-app.new-namespace-2.svc.cluster.local.", qtype: dns.TypeA, upstream: "kube-dns"},
		{name: "endpoint", qname: "web-0.nginx.default.svc.cluster.local.", qtype: dns.TypeA, upstream: "kube-dns"},
		{name: "srv", qname: "_https._tcp.my-app.new-namespace-2.svc.cluster.local.", qtype: dns.TypeSRV, upstream: "kubernetes"},
		{name: "pod", qname: "10-244-1-5.default.pod.cluster.local.", qtype: dns.TypeA, upstream: "kube-dns"},
		{name: "svc apex", qname: "svc.cluster.local.", qtype: dns.TypeA, upstream: "kubernetes"},
		{name: "zone apex", qname: "cluster.local.", qtype: dns.TypeA, upstream: "kubernetes"},
		{name: "out of zone", qname: "my-app.corp.example.", qtype: dns.TypeA, upstream: "kube-dns"},
		{name: "namespace apex of another zone", qname: "my-app.svc.example.org.", qtype: dns.TypeA, upstream: "kube-dns"},
	}
	for _, tc := range tests {
		for _, mode := range []Mode{ModeLog, ModeRefuse} {
			for _, rcode := range []int{dns.RcodeNameError, dns.RcodeRefused} {
				t.Run(fmt.Sprintf("%s/%s/%s", tc.name, mode, dns.RcodeToString[rcode]), func(t *testing.T) {
					zones := tc.zones
					if zones == nil {
						zones = []string{"cluster.local."}
					}
					cfg := testConfig(zones, mode, rcode, tc.allow...)
					g := New(cfg)
					u := upstreams[tc.upstream]()
					g.Next = u

					r := query(tc.qname, tc.qtype, tc.edns)
					wantAction := ""
					switch {
					case tc.allowed:
						wantAction = actionAllowed
					case tc.held && mode == ModeLog:
						wantAction = actionLogged
					case tc.held:
						wantAction = actionRefused
					}
					zone := clusterdns.Classify(tc.qname, zones).Zone
					before := apexCount(zone, tc.answer, wantAction)

					rec := dnstest.NewRecorder(&test.ResponseWriter{})
					code, err := g.ServeDNS(context.Background(), rec, r)
					if err != nil {
						t.Fatalf("ServeDNS: %v", err)
					}

					if wantAction != "" {
						if got := apexCount(zone, tc.answer, wantAction) - before; got != 1 {
							t.Errorf("counter %s/%s rose by %v, want 1", tc.answer, wantAction, got)
						}
					}
					if tc.held && mode == ModeRefuse {
						checkRefusal(t, r, u, rec.Msg, code, rcode)
						return
					}
					if rec.Msg != u.written || u.written != nil && !u.unchanged() {
						t.Errorf("got %v, want the upstream's answer unchanged: %v", rec.Msg, u.written)
					}
					if code != u.rcode {
						t.Errorf("returned rcode %d, want the upstream's %d", code, u.rcode)
					}
				})
			}
		}
	}
}

// checkRefusal checks the answer written in place of the upstream's.
func checkRefusal(t *testing.T, r *dns.Msg, u *upstream, got *dns.Msg, code, rcode int) {
	t.Helper()
	upstream := u.written
	if !u.unchanged() {
		t.Errorf("the upstream's message was changed: %v", upstream) // it may sit in cache
	}
	if got == nil || got == upstream {
		t.Fatalf("got %v, want a refusal", got)
	}
	wantCode := rcode
	if rcode == dns.RcodeRefused {
		wantCode = dns.RcodeSuccess // written already, so the server must not answer again
	}
	if code != wantCode {
		t.Errorf("returned rcode %d, want %d", code, wantCode)
	}
	if got.Id != r.Id || !got.Response || got.Rcode != rcode {
		t.Errorf("header id=%d response=%v rcode=%d, want id=%d response=true rcode=%d", got.Id, got.Response, got.Rcode, r.Id, rcode)
	}
	if got.RecursionDesired != r.RecursionDesired || got.Authoritative != upstream.Authoritative || got.RecursionAvailable != upstream.RecursionAvailable {
		t.Errorf("flags rd=%v aa=%v ra=%v, want rd=%v aa=%v ra=%v", got.RecursionDesired, got.Authoritative, got.RecursionAvailable,
			r.RecursionDesired, upstream.Authoritative, upstream.RecursionAvailable)
	}
	if len(got.Question) != 1 || got.Question[0] != r.Question[0] {
		t.Errorf("question %v, want %v as asked", got.Question, r.Question)
	}
	if len(got.Answer) != 0 {
		t.Errorf("answer section %v, want none", got.Answer)
	}
	if len(got.Ns) != 1 || got.Ns[0].Header().Rrtype != dns.TypeSOA {
		t.Fatalf("authority section %v, want one SOA", got.Ns)
	}
	// Every refusal is cached alike, whatever the type and the upstream's SOA.
	if s := got.Ns[0].(*dns.SOA); s.Hdr.Ttl != negativeTTL || s.Minttl != negativeTTL {
		t.Errorf("SOA %v, want TTL and minimum %d", s, negativeTTL)
	}
	if len(upstream.Ns) > 0 {
		want := dns.Copy(upstream.Ns[0]).(*dns.SOA)
		want.Hdr.Ttl, want.Minttl = negativeTTL, negativeTTL
		if got.Ns[0].String() != want.String() {
			t.Errorf("SOA %v, want the upstream's with the negative TTL: %v", got.Ns[0], want)
		}
	}
	if zone := clusterdns.Classify(r.Question[0].Name, []string{"cluster.local.", "example.org."}).Zone; got.Ns[0].Header().Name != zone {
		t.Errorf("SOA owner %q, want the zone %q", got.Ns[0].Header().Name, zone)
	}
	qopt, opt := r.IsEdns0(), got.IsEdns0()
	switch {
	case qopt == nil && len(got.Extra) != 0:
		t.Errorf("additional section %v, want none: the query had no OPT", got.Extra)
	case qopt != nil && (len(got.Extra) != 1 || opt == nil):
		t.Errorf("additional section %v, want just the OPT", got.Extra)
	case qopt != nil && opt.Do() != qopt.Do():
		t.Errorf("DO=%v, want the query's %v", opt.Do(), qopt.Do())
	}
	if _, err := got.Pack(); err != nil {
		t.Errorf("refusal does not pack: %v", err)
	}
	// A cache in front sets TTLs in place: the refusal must share no record with the upstream's.
	got.Ns[0].Header().Ttl = 1
	if opt != nil {
		opt.SetUDPSize(512)
		for _, o := range opt.Option {
			if n, ok := o.(*dns.EDNS0_NSID); ok {
				n.Nsid = "00"
			}
		}
	}
	if !u.unchanged() {
		t.Errorf("changing the refusal changed the upstream's message: %v", upstream)
	}
}

func apexCount(zone, answer, action string) float64 {
	if action == "" {
		return 0
	}
	return testutil.ToFloat64(namespaceApexAnswers.WithLabelValues("", zone, "", answer, action, clientUnknown))
}

func testConfig(zones []string, mode Mode, rcode int, allow ...string) config {
	cfg := config{zones: zones, mode: mode, rcode: rcode, allowNamespaces: map[string]struct{}{}, allowClients: map[string]struct{}{},
		logInterval: defaultLogInterval, logLimit: defaultLogLimit}
	for _, ns := range allow {
		cfg.allowNamespaces[ns] = struct{}{}
	}
	return cfg
}

func TestServeDNSBadInput(t *testing.T) {
	long := strings.Repeat("a.", 126) + "svc.cluster.local." // over 255 octets: no server would send it
	name253 := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 45) + ".svc.cluster.local."
	tests := []struct {
		name string
		msg  func() *dns.Msg
	}{
		{"no question", func() *dns.Msg { m := new(dns.Msg); m.Id = 1; return m }},
		{"two questions", func() *dns.Msg {
			m := query("my-app.svc.cluster.local.", dns.TypeA, noEDNS)
			m.Question = append(m.Question, m.Question[0])
			return m
		}},
		{"class CH", func() *dns.Msg {
			m := query("my-app.svc.cluster.local.", dns.TypeA, noEDNS)
			m.Question[0].Qclass = dns.ClassCHAOS
			return m
		}},
		{"notify opcode", func() *dns.Msg {
			m := query("my-app.svc.cluster.local.", dns.TypeSOA, noEDNS)
			m.Opcode = dns.OpcodeNotify
			return m
		}},
		{"zone transfer", func() *dns.Msg { return query("my-app.svc.cluster.local.", dns.TypeAXFR, noEDNS) }},
		{"escaped dot in namespace", func() *dns.Msg { return query(`my\.app.svc.cluster.local.`, dns.TypeA, noEDNS) }},
		{"escaped byte in namespace", func() *dns.Msg { return query(`my\000app.svc.cluster.local.`, dns.TypeA, noEDNS) }},
		{"non-ASCII namespace", func() *dns.Msg { return query("mý-app.svc.cluster.local.", dns.TypeA, noEDNS) }},
		{"wildcard namespace", func() *dns.Msg { return query("*.svc.cluster.local.", dns.TypeA, noEDNS) }},
		{"255-octet name", func() *dns.Msg { return query(name253, dns.TypeA, noEDNS) }},
		{"over-long name", func() *dns.Msg { return query(long, dns.TypeA, noEDNS) }},
		{"empty name", func() *dns.Msg { return query("", dns.TypeA, noEDNS) }},
		{"root", func() *dns.Msg { return query(".", dns.TypeA, noEDNS) }},
	}
	for _, tc := range tests {
		for _, mode := range []Mode{ModeLog, ModeRefuse} {
			t.Run(tc.name+"/"+mode.String(), func(t *testing.T) {
				g := New(testConfig([]string{"cluster.local."}, mode, dns.RcodeNameError))
				u := upstreams["kubernetes"]()
				g.Next = u
				rec := dnstest.NewRecorder(&test.ResponseWriter{})
				code, err := g.ServeDNS(context.Background(), rec, tc.msg())
				if err != nil || code != dns.RcodeSuccess {
					t.Errorf("ServeDNS = %d, %v; want the upstream's 0, nil", code, err)
				}
				if rec.Msg != u.written {
					t.Errorf("got %v, want the upstream's answer untouched", rec.Msg)
				}
			})
		}
	}
}

func TestReportLine(t *testing.T) {
	buf := captureLog(t)

	tests := []struct {
		name     string
		mode     Mode
		upstream string
		want     []string
	}{
		{"log kube-dns", ModeLog, "kube-dns", []string{
			`[WARNING] plugin/nsguard: answer through namespace "my-app"`,
			`client=10.240.0.1 `,
			`question="My-App.svc.cluster.local. A"`,
			`typed="my-app"`,
			`answer=records`,
			`records="My-App.svc.cluster.local. 30 IN CNAME other-app-1.example.net.; My-App.svc.cluster.local. 30 IN RRSIG CNAME`,
			`other-app-2.example.net. 30 IN A 192.0.2.12"`,
			`action=logged`,
			`fix="if my-app is a Service, ask for my-app.<its namespace>, or create an ExternalName Service my-app in the client's namespace`,
			`'mode refuse' sends the client on`,
		}},
		{"refuse kubernetes", ModeRefuse, "kubernetes", []string{
			`answer=nodata records="" action=refused`,
			`add 'allow namespace my-app'"`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf.Reset()
			g := New(testConfig([]string{"cluster.local."}, tc.mode, dns.RcodeNameError))
			g.Next = upstreams[tc.upstream]()
			g.ServeDNS(context.Background(), dnstest.NewRecorder(&test.ResponseWriter{}), query("My-App.svc.cluster.local.", dns.TypeA, noEDNS))
			line := buf.String()
			if strings.Count(line, "\n") != 1 {
				t.Fatalf("want one line, got %q", line)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("line lacks %q:\n%s", w, line)
				}
			}
		})
	}
}

func TestReportBounded(t *testing.T) {
	buf := captureLog(t)

	cfg := testConfig([]string{"cluster.local."}, ModeLog, dns.RcodeNameError)
	cfg.logLimit = 3
	g := New(cfg)
	now := time.Unix(1_700_000_000, 0)
	g.limiter.clock = clockAt(&now)
	g.Next = upstreams["kubernetes"]()
	ask := func(client, ns string) {
		w := &test.ResponseWriter{RemoteIP: client}
		g.ServeDNS(context.Background(), dnstest.NewRecorder(w), query(ns+".svc.cluster.local.", dns.TypeA, noEDNS))
	}
	repeats := testutil.ToFloat64(logLinesSuppressed.WithLabelValues("", reasonRepeat))
	limits := testutil.ToFloat64(logLinesSuppressed.WithLabelValues("", reasonLimit))

	for range 5 {
		ask("10.244.1.5", "my-app") // one line, then repeats
	}
	for i := range 10 {
		ask("10.244.1.5", fmt.Sprintf("ns-%d", i)) // two more lines, then over the limit
	}
	if got := strings.Count(buf.String(), "\n"); got != 3 {
		t.Fatalf("%d lines in one second, want the log_limit 3:\n%s", got, buf.String())
	}
	if got := testutil.ToFloat64(logLinesSuppressed.WithLabelValues("", reasonRepeat)) - repeats; got != 4 {
		t.Errorf("repeat suppressions rose by %v, want 4", got)
	}
	if got := testutil.ToFloat64(logLinesSuppressed.WithLabelValues("", reasonLimit)) - limits; got != 8 {
		t.Errorf("limit suppressions rose by %v, want 8", got)
	}

	// The repeats of a question logged before wait for its next line; they are not suppressed lines.
	if got := strings.Split(buf.String(), "\n"); !strings.Contains(got[1], "client=10.244.1.5 question=\"ns-0") || strings.Contains(got[1], "suppressed=") {
		t.Errorf("want the second line to hold back nothing, got %q", got[1])
	}
	buf.Reset()
	now = now.Add(time.Second)
	ask("10.244.1.5", "ns-9")
	if !strings.HasSuffix(strings.TrimSpace(buf.String()), "suppressed=8") {
		t.Errorf("want the line to end in suppressed=8, got %q", buf.String())
	}
	// Still within log_interval: the same client and question stays quiet; another client is heard.
	buf.Reset()
	ask("10.244.1.5", "my-app")
	ask("10.244.1.6", "my-app")
	if got := buf.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "client=10.244.1.6") || strings.Contains(got, "suppressed=") {
		t.Errorf("want one line for 10.244.1.6, nothing held back since the line before, got %q", got)
	}
	// After log_interval the repeat is logged again.
	buf.Reset()
	now = now.Add(defaultLogInterval)
	ask("10.244.1.5", "my-app")
	if got := buf.String(); !strings.Contains(got, "client=10.244.1.5") || strings.Contains(got, "suppressed=") || !strings.HasSuffix(got, " repeats=5\n") { // 4 in the first second, 1 since
		t.Errorf("want the repeat logged again with the 5 repeats held back since its last line, nothing else held back, got %q", got)
	}
}

// heldByClassify is what the quick look must let through: a namespace apex, and with a view
// an endpoint name of one label. SRV port names never shadow a Service (see shadowed).
func heldByClassify(n clusterdns.Name, withView bool) bool {
	return n.Shape == clusterdns.NamespaceApex || withView && n.Shape == clusterdns.EndpointName && clusterdns.IsDNSLabel(n.Endpoint)
}
