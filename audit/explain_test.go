package audit

import (
	"slices"
	"testing"
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
	c := load(t, "testdata/incident.yaml", "testdata/shadow-list.yaml", "testdata/broad/near-misses.yaml")
	tests := []struct {
		name, from   string
		core, kube   int // winner index
		coreMeant    bool
		kubeMeant    bool
		muslStop     int
		wantMeantFor string
	}{
		// The incident: CoreDNS NODATA at 2 (musl stops), glibc goes upstream; kube-dns answers 2.
		{"my-app", "new-namespace-1", 3, 1, false, false, 1, ""},
		// From the Service's own namespace it is fine.
		{"my-app", "new-namespace-2", 0, 0, true, true, 0, "my-app.new-namespace-2.svc.cluster.local."},
		// The qualified name reaches the Service.
		{"my-app.new-namespace-2", "new-namespace-1", 1, 1, true, true, 1, "my-app.new-namespace-2.svc.cluster.local."},
		// The endpoint shadow: CoreDNS and kube-dns (headless) answer the endpoint first.
		{"primary.db", "new-namespace-1", 0, 0, false, false, 0, "primary.db.svc.cluster.local."},
		// A StatefulSet pod from its own namespace is meant.
		{"web-0.nginx", "web", 0, 0, true, true, 0, "web-0.nginx.web.svc.cluster.local."},
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
	e := Explain(load(t, "testdata/incident.yaml"), "my-app", "new-namespace-1", ExplainOptions{})
	want := []struct{ core, kube string }{
		{"NXDOMAIN", "NXDOMAIN"},
		{"NODATA", "CNAME other-app-1.example.net., CNAME other-app-2.example.net."},
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
