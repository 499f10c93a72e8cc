package model

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nsguard/nsguard/clusterdns"
)

func TestCandidates(t *testing.T) {
	search := []string{"c.svc.cluster.local", "svc.cluster.local", "cluster.local"}
	tests := []struct {
		name  string
		ndots int
		want  []string
	}{
		{"x", 5, []string{"x.c.svc.cluster.local.", "x.svc.cluster.local.", "x.cluster.local.", "x."}},
		{"a.b", 1, []string{"a.b.", "a.b.c.svc.cluster.local.", "a.b.svc.cluster.local.", "a.b.cluster.local."}},
		{"x.example.com.", 5, []string{"x.example.com."}},
	}
	for _, tt := range tests {
		if got := Candidates(tt.name, search, tt.ndots); !slices.Equal(got, tt.want) {
			t.Errorf("%s ndots %d: got %v, want %v", tt.name, tt.ndots, got, tt.want)
		}
	}
}

func TestExplain(t *testing.T) {
	c := load(t, "../testdata/incident.yaml", "../testdata/shadow-list.yaml", "../testdata/broad/near-misses.yaml")
	tests := []struct {
		name, from   string
		core, kube   int // winner index
		coreMeant    bool
		kubeMeant    bool
		muslStop     int // musl stops at a NODATA before the winner; -1 when it does not
		wantMeantFor string
	}{
		// The incident: CoreDNS NODATA at 2 (musl stops), glibc goes upstream; kube-dns answers 2.
		{"my-app", "new-namespace-1", 3, 1, false, false, 1, ""},
		// From the Service's own namespace it is fine.
		{"my-app", "new-namespace-2", 0, 0, true, true, -1, "my-app.new-namespace-2.svc.cluster.local."},
		// The qualified name reaches the Service.
		{"my-app.new-namespace-2", "new-namespace-1", 1, 1, true, true, -1, "my-app.new-namespace-2.svc.cluster.local."},
		// The endpoint shadow: CoreDNS and kube-dns (headless) answer the endpoint first.
		{"primary.db", "new-namespace-1", 0, 0, false, false, -1, "primary.db.svc.cluster.local."},
		// A StatefulSet pod from its own namespace is meant.
		{"web-0.nginx", "web", 0, 0, true, true, -1, "web-0.nginx.web.svc.cluster.local."},
	}
	for _, tt := range tests {
		e := Explain(c, tt.name, tt.from, ExplainOptions{})
		if e.CoreDNS.Winner != tt.core || e.KubeDNS.Winner != tt.kube || e.CoreDNS.Meant != tt.coreMeant ||
			e.KubeDNS.Meant != tt.kubeMeant || e.CoreDNS.MuslStop != tt.muslStop || e.MeantName != tt.wantMeantFor {
			t.Errorf("%s from %s: coredns %+v, kube-dns %+v, meant %q (%s)", tt.name, tt.from, e.CoreDNS, e.KubeDNS, e.MeantName, e.Meant)
		}
	}
}

func TestExplainIncidentAnswers(t *testing.T) {
	e := Explain(load(t, "../testdata/incident.yaml"), "my-app", "new-namespace-1", ExplainOptions{})
	want := []struct{ core, kube string }{
		{"NXDOMAIN", "NXDOMAIN"},
		{"NODATA", "one CNAME to other-app-1.legacy-a.svc.cluster.local. or other-app-2.legacy-a.svc.cluster.local., A 10.96.0.31, A 10.96.0.32, in random order"},
		{"NXDOMAIN", "NXDOMAIN"},
		{"upstream", "upstream"},
	}
	if len(e.Candidates) != len(want) {
		t.Fatalf("%d candidates", len(e.Candidates))
	}
	for i, w := range want {
		c := e.Candidates[i]
		if c.CoreDNS.String() != w.core || c.KubeDNS.String() != w.kube {
			t.Errorf("%s: coredns %s kube-dns %s, want %s / %s", c.Name, c.CoreDNS, c.KubeDNS, w.core, w.kube)
		}
	}
}

// TestWalk is the search walk of each resolver on one candidate's answer, the second
// candidate answering an address. test/e2e/resolvers runs the real ones through the same.
func TestWalk(t *testing.T) {
	names := []string{"x.c.svc.cluster.local.", "x.svc.cluster.local."}
	second := clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{{Owner: names[1], Type: clusterdns.TypeA, Data: "10.0.0.2"}}}
	cname := clusterdns.Record{Owner: names[0], Type: clusterdns.TypeCNAME, Data: "t.example.net."}
	target := clusterdns.Record{Owner: "t.example.net.", Type: clusterdns.TypeA, Data: "10.0.0.9"}
	on, stops := []string{"10.0.0.2"}, []string(nil)
	tests := []struct {
		name                    string
		first                   clusterdns.Answer
		glibc, musl, goes, ares []string // addresses; nil: the lookup fails
	}{
		{"NXDOMAIN", clusterdns.Answer{Rcode: clusterdns.NXDomain}, on, on, on, on},
		{"NODATA", clusterdns.Answer{Rcode: clusterdns.NoError}, on, stops, on, on},
		{"SERVFAIL", clusterdns.Answer{Rcode: ServFail}, on, stops, on, stops},
		{"REFUSED", clusterdns.Answer{Rcode: Refused}, stops, stops, on, stops},
		{"CNAME then address", clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{cname, target}},
			[]string{"10.0.0.9"}, []string{"10.0.0.9"}, []string{"10.0.0.9"}, []string{"10.0.0.9"}},
		{"address then CNAME", clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{target, cname}},
			stops, []string{"10.0.0.9"}, []string{"10.0.0.9"}, on},
	}
	for _, tt := range tests {
		answers := []clusterdns.Answer{tt.first, second}
		for r, want := range map[string][]string{Glibc: tt.glibc, Musl: tt.musl, Go: tt.goes, CAres: tt.ares} {
			o := Walk(r, names, answers)
			if got := o.Addresses; o.Fails != (want == nil) || !o.Fails && !slices.Equal(got, want) {
				t.Errorf("%s, %s: %+v, want %v", tt.name, r, o, want)
			}
		}
	}
}

// TestExplainResolvers predicts what each stub resolver got from the incident, as observed:
// on CoreDNS musl stops at the namespace's NODATA, glibc and Go go on upstream; on kube-dns
// musl and Go get both wrong addresses, and glibc one of them or a failure.
func TestExplainResolvers(t *testing.T) {
	e := Explain(load(t, "../testdata/incident.yaml"), "my-app", "new-namespace-1", ExplainOptions{})
	core := []ResolverOutcome{
		{Resolver: Glibc, Candidate: 3},
		{Resolver: Musl, Candidate: 1, Fails: true},
		{Resolver: Go, Candidate: 3},
		{Resolver: CAres, Candidate: 3},
	}
	kube := []ResolverOutcome{
		{Resolver: Glibc, Candidate: 1, Addresses: []string{"10.96.0.31", "10.96.0.32"}, OneOf: true, MayFail: true},
		{Resolver: Musl, Candidate: 1, Addresses: []string{"10.96.0.31", "10.96.0.32"}},
		{Resolver: Go, Candidate: 1, Addresses: []string{"10.96.0.31", "10.96.0.32"}},
		// c-ares takes the target's address when it follows the CNAME, and else goes on.
		{Resolver: CAres, Candidate: 1, Addresses: []string{"10.96.0.31", "10.96.0.32"}, OneOf: true,
			OrNext: &ResolverOutcome{Resolver: CAres, Candidate: 3}},
	}
	if !reflect.DeepEqual(e.CoreDNS.Resolvers, core) {
		t.Errorf("CoreDNS: %+v\nwant %+v", e.CoreDNS.Resolvers, core)
	}
	if !reflect.DeepEqual(e.KubeDNS.Resolvers, kube) || e.KubeDNS.MuslStop != -1 {
		t.Errorf("kube-dns: %+v, musl stop %d\nwant %+v, -1", e.KubeDNS.Resolvers, e.KubeDNS.MuslStop, kube)
	}
	if want := "glibc gets 10.96.0.31 or 10.96.0.32, or fails when that address comes before the CNAME"; !strings.Contains(e.KubeDNS.Verdict, want) {
		t.Errorf("kube-dns verdict %q lacks %q", e.KubeDNS.Verdict, want)
	}
	// After the blog's fix every resolver reaches the Service, through the alias.
	e = Explain(load(t, "../testdata/incident.yaml", "../testdata/blog-fix.yaml"), "my-app", "new-namespace-1", ExplainOptions{})
	for _, o := range [][]ResolverOutcome{e.CoreDNS.Resolvers, e.KubeDNS.Resolvers} {
		for _, r := range o {
			if r.Candidate != 0 || !slices.Equal(r.Addresses, []string{"10.96.0.20"}) || !r.Meant || r.Fails || r.MayFail {
				t.Errorf("after the fix: %+v", r)
			}
		}
	}
}

// TestExplainRefuse predicts the incident behind nsguard in mode refuse: with NXDOMAIN every
// resolver goes on past the namespace apex; with REFUSED only Go does.
func TestExplainRefuse(t *testing.T) {
	c := load(t, "../testdata/incident.yaml")
	tests := []struct {
		rcode   string
		stop    map[string]bool // the resolvers that fail at the apex, candidate 2
		verdict string
	}{
		{clusterdns.NXDomain, map[string]bool{}, "candidate 4 (my-app.) goes upstream"},
		{Refused, map[string]bool{Glibc: true, Musl: true, CAres: true}, "glibc, musl and c-ares stop at candidate 2 (REFUSED) and fail"},
	}
	for _, tt := range tests {
		e := Explain(c, "my-app", "new-namespace-1", ExplainOptions{Refuse: tt.rcode})
		if a := e.Candidates[1]; a.CoreDNS.Rcode != tt.rcode || a.KubeDNS.Rcode != tt.rcode {
			t.Errorf("%s: the apex answers %v and %v", tt.rcode, a.CoreDNS, a.KubeDNS)
		}
		for _, o := range []Outcome{e.CoreDNS, e.KubeDNS} {
			for _, r := range o.Resolvers {
				want := ResolverOutcome{Resolver: r.Resolver, Candidate: 3}
				if tt.stop[r.Resolver] {
					want = ResolverOutcome{Resolver: r.Resolver, Candidate: 1, Fails: true}
				}
				if !reflect.DeepEqual(r, want) {
					t.Errorf("%s: %+v, want %+v", tt.rcode, r, want)
				}
			}
			if !strings.Contains(o.Verdict, tt.verdict) {
				t.Errorf("%s: verdict %q lacks %q", tt.rcode, o.Verdict, tt.verdict)
			}
		}
	}
}
