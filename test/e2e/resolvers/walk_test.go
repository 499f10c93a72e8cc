//go:build e2e

package resolvers

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/test/e2e/dnsserve"
)

// walkServerIP is this test's server, apart from TestLookups's.
const walkServerIP = "127.53.0.2"

// script is what the scripted server answers: an A answer per name, NXDOMAIN for any other
// name. AAAA gets the same rcode, and NODATA where A has records.
type script map[string]clusterdns.Answer

func (s script) serve(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg).SetReply(r)
	m.Authoritative, m.RecursionAvailable = true, true
	q := r.Question[0]
	a, ok := s[strings.ToLower(q.Name)]
	switch {
	case !ok:
		m.Rcode = dns.RcodeNameError
	case a.Rcode != clusterdns.NoError:
		m.Rcode = dns.StringToRcode[a.Rcode]
	case q.Qtype == dns.TypeA:
		for _, rec := range a.Records {
			rr, err := dns.NewRR(rec.Owner + " 30 IN " + rec.Type + " " + rec.Data)
			if err != nil {
				panic(err)
			}
			m.Answer = append(m.Answer, rr)
		}
	}
	if m.Rcode != dns.RcodeSuccess || len(m.Answer) == 0 {
		soa, _ := dns.NewRR("cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1 7200 1800 86400 5")
		m.Ns = []dns.RR{soa}
	}
	w.WriteMsg(m)
}

// TestWalk runs every real resolver through a pod's search list where the first candidate
// answers each rcode, and where an answer's address comes before or after its CNAME, and
// checks that each ends where model.Walk, the model explain uses, says it does.
func TestWalk(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	c, err := Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.CAresVersion(ctx); err != nil || v != model.CAresVersion {
		t.Errorf("the c-ares client runs with c-ares %q (%v); explain models %s", v, err, model.CAresVersion)
	}
	rc := filepath.Join(t.TempDir(), "resolv.conf")
	if err := PodResolvConf(rc, walkServerIP, "ns"); err != nil {
		t.Fatal(err)
	}
	names := []string{"x.ns.svc.cluster.local.", "x.svc.cluster.local.", "x.cluster.local.", "x.corp.example.", "x."}
	const first, target, second = "10.0.0.1", "10.0.0.9", "10.0.0.2"
	rec := func(owner, typ, data string) clusterdns.Record {
		return clusterdns.Record{Owner: owner, Type: typ, Data: data}
	}
	cname := rec(names[0], clusterdns.TypeCNAME, "t.example.net.")
	tA := rec("t.example.net.", clusterdns.TypeA, target)
	tests := []struct {
		name  string
		first clusterdns.Answer
	}{
		{"NXDOMAIN", clusterdns.Answer{Rcode: clusterdns.NXDomain}},
		{"NODATA", clusterdns.Answer{Rcode: clusterdns.NoError}},
		{"SERVFAIL", clusterdns.Answer{Rcode: model.ServFail}},
		{"REFUSED", clusterdns.Answer{Rcode: model.Refused}},
		{"address", clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{rec(names[0], clusterdns.TypeA, first)}}},
		{"CNAME then address", clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{cname, tA}}},
		{"address then CNAME", clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{tA, cname}}},
		{"CNAME, another's address, address", clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{
			cname, rec("u.example.net.", clusterdns.TypeA, first), tA}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answers := []clusterdns.Answer{tt.first, {Rcode: clusterdns.NoError, Records: []clusterdns.Record{rec(names[1], clusterdns.TypeA, second)}},
				{Rcode: clusterdns.NXDomain}, {Rcode: clusterdns.NXDomain}, {Rcode: clusterdns.NXDomain}}
			s := script{}
			for i, n := range names {
				s[n] = answers[i]
			}
			stop := serveScript(t, walkServerIP+":53", s)
			defer stop()
			for _, k := range Kinds {
				r, err := c.Lookup(ctx, k, rc, "x")
				if err != nil {
					t.Fatal(err)
				}
				want := model.Walk(k.String(), names, answers)
				wantAddrs := strings.Join(want.Addresses, " ")
				if want.Fails {
					wantAddrs = "error"
				}
				got := strings.Join(r.Addrs, " ")
				if !r.OK() {
					got = "error"
				}
				t.Logf("%s: %s (%s)", k, got, r.Err)
				if got != wantAddrs {
					t.Errorf("%s got %q (%s); explain's model says candidate %d: %q", k, got, r.Err, want.Candidate+1, wantAddrs)
				}
			}
		})
	}
}

// serveScript answers s on addr over UDP and TCP until stop, which returns once addr is free
// for the next subtest.
func serveScript(t *testing.T, addr string, s script) (stop func()) {
	t.Helper()
	srv, err := dnsserve.Start(addr, dns.HandlerFunc(s.serve))
	if err != nil {
		t.Fatal(err)
	}
	return func() { srv.Close() }
}
