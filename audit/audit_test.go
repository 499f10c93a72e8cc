package audit_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	. "github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
)

func load(t testing.TB, paths ...string) *model.Cluster {
	t.Helper()
	c, err := model.LoadFiles(paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// auditOf runs every check on the offline model.
func auditOf(c *model.Cluster, zone string) []Finding { return Audit(c.Names(), zone) }

// key names a finding by check and its objects, for comparing sets.
func key(f Finding) string {
	objs := make([]string, len(f.Objects))
	for i, o := range f.Objects {
		objs[i] = o.String()
	}
	return f.Check + ": " + strings.Join(objs, ", ")
}

func TestAuditFixtures(t *testing.T) {
	tests := []struct {
		name  string
		paths []string
		want  []string // key(f) prefixes, in Audit's order
	}{
		{"incident", []string{"testdata/incident.yaml"}, []string{
			"namespace-captures-service: Namespace my-app, Service new-namespace-2/my-app, Service my-app/other-app-1, Service my-app/other-app-2",
		}},
		// The fix makes new-namespace-1 answer its own name on kube-dns: worth knowing.
		{"after the blog's fix", []string{"testdata/incident.yaml", "testdata/blog-fix.yaml"}, []string{
			"namespace-captures-service: Namespace my-app, Service new-namespace-1/my-app, Service new-namespace-2/my-app, Service my-app/other-app-1, Service my-app/other-app-2",
			"namespace-apex-answers: Namespace new-namespace-1, Service new-namespace-1/my-app",
		}},
		{"shadow list", []string{"testdata/shadow-list.yaml"}, []string{
			"endpoint-shadows-service: Service new-namespace-1/db, Endpoint new-namespace-1/db/primary, Service db/primary",
			// Namespace db and the headless Service db in new-namespace-1: a real capture too.
			"namespace-captures-service: Namespace db, Service new-namespace-1/db",
		}},
		{"aliases", []string{"testdata/broad/aliases.yaml"}, []string{
			"alias-loop: Service apps/ping, Service apps/pong, Service apps/ping",
			"alias-loop: Service apps/pong, Service apps/ping, Service apps/pong",
			"alias-through-namespace: Service apps/to-apex, Namespace legacy",
			"alias-through-namespace: Service apps/via-alias, Service apps/to-apex, Namespace legacy",
			"alias-dangling: Service apps/dangling",
			"namespace-apex-answers: Namespace apps, Service apps/dangling, Service apps/ping, Service apps/pong, Service apps/to-apex, Service apps/via-alias",
			"namespace-apex-answers: Namespace legacy, Service legacy/api-alias, Service legacy/api-alias2, Service legacy/mail",
		}},
		{"reserved", []string{"testdata/broad/reserved.json"}, []string{
			"reserved-namespace: Namespace svc",
			"namespace-captures-service: Namespace team-a, Service tools/team-a",
			"reserved-namespace: Namespace com, Service com/google",
			"namespace-apex-answers: Namespace com, Service com/google",
		}},
		{"near misses", []string{"testdata/broad/near-misses.yaml"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, f := range auditOf(load(t, tt.paths...), "cluster.local") {
				got = append(got, key(f))
				if f.Fix == "" || f.Message == "" || f.Clients.Scope == "" {
					t.Errorf("%s: incomplete finding %+v", key(f), f)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

// TestIncidentAnswers: the finding predicts, record by record, what CoreDNS and the real
// kube-dns answered for the incident.
func TestIncidentAnswers(t *testing.T) {
	f := auditOf(load(t, "testdata/incident.yaml"), "cluster.local.")[0]
	if f.Severity != Error || f.Name != "my-app.svc.cluster.local." {
		t.Errorf("severity %s name %s", f.Severity, f.Name)
	}
	if !f.CoreDNS.NoData() {
		t.Errorf("CoreDNS answer %v, want NODATA", f.CoreDNS)
	}
	t1, t2 := "other-app-1.legacy-a.svc.cluster.local.", "other-app-2.legacy-a.svc.cluster.local."
	want := clusterdns.Answer{Rcode: clusterdns.NoError, CNAMEOneOf: []string{t1, t2}, Shuffled: true,
		Records: []clusterdns.Record{{Owner: t1, Type: "A", Data: "10.96.0.31"}, {Owner: t2, Type: "A", Data: "10.96.0.32"}}}
	if !reflect.DeepEqual(*f.KubeDNS, want) {
		t.Errorf("kube-dns answer %+v, want %+v", *f.KubeDNS, want)
	}
	if f.Clients.Scope != "all-except" || !slices.Equal(f.Clients.Namespaces, []string{"new-namespace-2"}) {
		t.Errorf("clients %+v", f.Clients)
	}
	if !strings.Contains(f.Fix, "create an ExternalName Service my-app in the client's namespace pointing at my-app.new-namespace-2.svc.cluster.local") {
		t.Errorf("fix %q does not spell out the blog's fix", f.Fix)
	}
}

// After the blog's fix the advice names the real Service, not the alias the fix made.
func TestAdviceAfterBlogFix(t *testing.T) {
	for _, f := range auditOf(load(t, "testdata/incident.yaml", "testdata/blog-fix.yaml"), "cluster.local") {
		if f.Check == CheckNamespaceCapture && !strings.Contains(f.Fix, "Service my-app exists in new-namespace-2, new-namespace-1; use my-app.new-namespace-2,") {
			t.Errorf("fix %q, want my-app.new-namespace-2 first", f.Fix)
		}
		if f.Check == CheckApexAnswers && (f.Severity != Info || !strings.Contains(f.Message, "10.96.0.20")) {
			t.Errorf("apex answer %+v", f)
		}
	}
}

// A namespace with only ClusterIP Services is a warning: CoreDNS NODATA, kube-dns NXDOMAIN.
func TestCaptureWithoutAliasesIsWarning(t *testing.T) {
	c := model.NewCluster()
	c.AddNamespace("payments", "test")
	c.AddNamespace("shop", "test")
	c.AddService(model.Service{Namespace: "shop", Name: "payments", ClusterIPs: []string{"10.0.0.1"}})
	c.AddService(model.Service{Namespace: "payments", Name: "api", ClusterIPs: []string{"10.0.0.2"}})
	fs := auditOf(c, "cluster.local")
	if len(fs) != 1 || fs[0].Severity != Warning || fs[0].KubeDNS.Rcode != clusterdns.NXDomain || !fs[0].CoreDNS.NoData() {
		t.Fatalf("got %+v", fs)
	}
}

func TestEndpointShadowNearMisses(t *testing.T) {
	tests := []struct {
		name   string
		add    func(c *model.Cluster)
		shadow bool
	}{
		{"statefulset pod in own namespace", func(c *model.Cluster) {}, false},
		{"service web-0 in namespace nginx", func(c *model.Cluster) {
			c.AddService(model.Service{Namespace: "nginx", Name: "web-0"})
		}, true},
		// Service names start with a letter (RFC 1035), so a dashed IP never shadows one.
		{"dashed IP", func(c *model.Cluster) {
			c.AddSliceEndpoint("web", "nginx", clusterdns.SliceEndpoint{Addresses: []string{"10.1.2.3"}}, "test")
			c.AddService(model.Service{Namespace: "nginx", Name: "10-1-2-3"})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := load(t, "testdata/broad/near-misses.yaml")
			tt.add(c)
			n := 0
			for _, f := range auditOf(c, "cluster.local") {
				if f.Check == CheckEndpointShadow {
					n++
				}
			}
			if want := map[bool]int{false: 0, true: 1}[tt.shadow]; n != want {
				t.Errorf("%d endpoint shadows, want %d", n, want)
			}
		})
	}
}

// BenchmarkAudit audits 5,000 namespaces and 20,000 Services: one Service in 50 is named
// like a namespace, one in 20 is an ExternalName, and 1,000 headless Services have endpoints.
func BenchmarkAudit(b *testing.B) {
	c := model.NewCluster()
	for i := range 5000 {
		c.AddNamespace(fmt.Sprintf("ns-%d", i), "bench")
	}
	for i := range 20000 {
		ns := fmt.Sprintf("ns-%d", i%5000)
		s := model.Service{Namespace: ns, Name: fmt.Sprintf("svc-%d", i), ClusterIPs: []string{"10.96.0.1"}}
		switch {
		case i%50 == 0:
			s.Name = fmt.Sprintf("ns-%d", i/50+1)
		case i%20 == 1:
			s.Type, s.ExternalName = "ExternalName", fmt.Sprintf("svc-%d.ns-%d.svc.cluster.local", i+2, (i+2)%5000)
		case i%20 == 2:
			s.Headless, s.ClusterIPs = true, nil
			c.AddEndpoint(ns, s.Name, clusterdns.Endpoint{Name: "web-0", Addrs: []string{"10.244.0.1"}})
		}
		c.AddService(s)
	}
	b.ReportAllocs()
	for b.Loop() {
		if len(auditOf(c, "cluster.local")) == 0 {
			b.Fatal("no findings")
		}
	}
}
