package model

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/clusterdns"
)

func load(t testing.TB, paths ...string) *Cluster {
	t.Helper()
	c, err := LoadFiles(paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadErrorsNameFileAndDocument(t *testing.T) {
	tests := []struct{ file, want string }{
		{"../testdata/bad/bad.yaml", "../testdata/bad/bad.yaml: document 2: Service: "},
		{"../testdata/bad/nokind.yaml", "../testdata/bad/nokind.yaml: document 1: no kind"},
		{"../testdata/bad/syntax.yaml", "../testdata/bad/syntax.yaml: document 2: "},
	}
	for _, tt := range tests {
		_, err := LoadFiles([]string{tt.file}, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want prefix %q", tt.file, err, tt.want)
		}
	}
	if _, err := LoadFiles([]string{"../testdata/missing.yaml"}, nil); err == nil {
		t.Error("a missing file loaded")
	}
}

func TestLoadSources(t *testing.T) {
	stdin := strings.NewReader(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"from-stdin"}}`)
	c, err := LoadFiles([]string{"../testdata/broad", "-"}, stdin)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"apps", "legacy", "web", "billing", "com", "svc", "team-a", "tools", "from-stdin"} {
		if c.Namespace(ns) == nil {
			t.Errorf("namespace %s not loaded", ns)
		}
	}
	if s := c.Service("com", "google"); s == nil || s.ExternalName != "evil.example.net" {
		t.Errorf("typed List item: %+v", s)
	}
	if e := c.Endpoint("web", "nginx", "web-1"); e == nil || e.Kind != clusterdns.EndpointHostname {
		t.Errorf("StatefulSet endpoint web-1: %+v", e)
	}
	if c.Namespace("tools").Source != "implied by Service tools/team-a" {
		t.Errorf("tools: %+v", c.Namespace("tools"))
	}
	if got := c.Service("apps", "to-apex").Source; got != "../testdata/broad/aliases.yaml: document 4" {
		t.Errorf("source %q", got)
	}
	c = load(t, "../testdata/shadow-list.yaml")
	if e := c.Endpoint("new-namespace-1", "db", "primary"); e == nil || e.Addrs[0] != "10.244.1.20" {
		t.Errorf("slice endpoint: %+v", e)
	}
}

// TestAuditOfflineScale reads 5,000 namespaces and 20,000 Services from manifests and
// finds every capture among them. Its speed is BenchmarkLoadAndAudit's to measure.
func TestAuditOfflineScale(t *testing.T) {
	c := load(t, writeScale(t))
	captures := 0
	for _, f := range audit.Audit(c.Names(), "cluster.local") {
		if f.Check == audit.CheckNamespaceCapture {
			captures++
		}
	}
	if n, s := c.Len(); n != 5000 || s != 20000 || captures != 400 {
		t.Fatalf("%d namespaces, %d services, %d captures; want 5000, 20000, 400", n, s, captures)
	}
}

// BenchmarkLoadAndAudit is the offline budget: under 2 s for the cluster of TestAuditOfflineScale.
func BenchmarkLoadAndAudit(b *testing.B) {
	path := writeScale(b)
	b.ReportAllocs()
	for b.Loop() {
		audit.Audit(load(b, path).Names(), "cluster.local")
	}
}

func writeScale(t testing.TB) string {
	var sb strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns-%d}\n", i)
	}
	for i := range 20000 {
		name := fmt.Sprintf("svc-%d", i)
		if i%50 == 0 {
			name = fmt.Sprintf("ns-%d", i/50+1) // 400 distinct names, each in another namespace
		}
		fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: ns-%d}\nspec: {clusterIP: 10.96.0.1, ports: [{port: 80}]}\n", name, i%5000)
	}
	path := filepath.Join(t.TempDir(), "scale.yaml")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadStreams(t *testing.T) {
	svc := func(name string) string {
		return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `","namespace":"a"},"spec":{"clusterIP":"10.96.0.1"}}`
	}
	nested := func(depth int) string {
		return strings.Repeat(`{"apiVersion":"v1","kind":"List","items":[`, depth) + svc("s1") + strings.Repeat("]}", depth)
	}
	small := Limits{YAMLDocument: 128 << 10, JSONDocument: 256 << 10, ListDepth: 3}
	long := strings.Repeat("x", 1<<20)
	tests := []struct {
		name     string
		in       string
		services []string // in namespace a
		err      string   // substring; "" for none
	}{
		{"kubectl get -o json: items before kind", `{"apiVersion":"v1","items":[` + svc("s1") + "," + svc("s2") + `],"kind":"List","metadata":{}}`, []string{"s1", "s2"}, ""},
		{"typed list, items without kind", `{"kind":"ServiceList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"s1","namespace":"a"}}]}`, []string{"s1"}, ""},
		{"typed list, items without kind before the list's kind", `{"apiVersion":"v1","items":[{"metadata":{"name":"s1","namespace":"a"}}],"kind":"ServiceList"}`, []string{"s1"}, ""},
		{"objects one after another", svc("s1") + "\n" + svc("s2"), []string{"s1", "s2"}, ""},
		{"nested list", nested(2), []string{"s1"}, ""},
		{"Lists as deep as the bound", nested(3), []string{"s1"}, ""},
		{"empty list", `{"apiVersion":"v1","kind":"List","items":[]}`, nil, ""},
		{"YAML documents", "apiVersion: v1\nkind: Service\nmetadata: {name: s1, namespace: a}\n---\n# only a comment\n---\n" + svc("s2"), []string{"s1", "s2"}, ""},
		{"YAML List", "apiVersion: v1\nkind: List\nitems:\n- " + svc("s1") + "\n- {apiVersion: v1, kind: Service, metadata: {name: s2, namespace: a}}\n", []string{"s1", "s2"}, ""},
		{"item without kind in a List", `{"apiVersion":"v1","items":[{"metadata":{"name":"s1"}}],"kind":"List"}`, nil, "document 1: item 1: no kind"},
		{"item without apiVersion in a List", `{"apiVersion":"v1","items":[{"kind":"Service","metadata":{"name":"s1"}}],"kind":"List"}`, nil, "document 1: item 1: Service without apiVersion"},
		{"not an object", `["x"]`, nil, "document 1: not a Kubernetes object"},
		{"not an object in YAML", "just a line\n", nil, "document 1: not a Kubernetes object"},
		{"broken JSON", `{"apiVersion":"v1","kind":"List","items":[` + svc("s1") + `,{"kind":]}`, nil, "<stdin>: document 1: invalid character ']'"},
		{"broken item", `{"apiVersion":"v1","kind":"List","items":[` + svc("s1") + `,{"kind":"Service","apiVersion":"v1","spec":7}]}`, nil, "document 1: item 2: Service: "},
		{"broken YAML", "apiVersion: v1\nkind: Service\nmetadata: {name: s1, namespace: a}\n---\nkind: [\n", nil, "<stdin>: document 2: "},
		{"Lists deeper than the bound", nested(4), nil, "<stdin>: document 1: a List nested in Lists more than 3 deep"},
		{"a YAML document too large", "apiVersion: v1\nkind: ConfigMap\ndata:\n  x: " + long + "\n", nil, "<stdin>: document 1: a YAML document over 128 KiB"},
		{"a YAML document too large after one that fits", "apiVersion: v1\nkind: Service\nmetadata: {name: s1, namespace: a}\n---\napiVersion: v1\nkind: ConfigMap\ndata:\n  x: " + long + "\n", nil, "<stdin>: document 2: a YAML document over"},
		{"a JSON document too large", `{"apiVersion":"v1","kind":"List","items":[` + svc("s1") + `,{"kind":"ConfigMap","data":{"x":"` + long + `"}}]}`, nil, "<stdin>: document 1: a JSON document over 256 KiB: split the file"},
		{"JSON documents each within the bound", strings.Repeat(svc("s1")+"\n", 5000), []string{"s1"}, ""},
		{"YAML documents each within the bound", strings.Repeat("---\n"+svc("s1")+"\n", 5000), []string{"s1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := small.LoadFiles([]string{"-"}, strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range tt.services {
				if c.Service("a", name) == nil {
					t.Errorf("Service a/%s not loaded", name)
				}
			}
			if _, n := c.Len(); n != len(tt.services) {
				t.Errorf("%d Services, want %d", n, len(tt.services))
			}
		})
	}
}

// After a JSON document over 1 MiB a new decoder goes on from what the old one read ahead:
// nothing after it may be lost.
func TestLoadAfterLargeJSONDocuments(t *testing.T) {
	big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"x":"` + strings.Repeat("x", 2<<20) + `"}}`
	svc := func(name string) string {
		return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `","namespace":"a"}}`
	}
	in := big + svc("s1") + "\n" + big + "\n" + svc("s2") + big
	c, err := LoadFiles([]string{"-"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if c.Service("a", "s1") == nil || c.Service("a", "s2") == nil {
		t.Errorf("Services after the large documents lost: %v %v", c.Service("a", "s1"), c.Service("a", "s2"))
	}
}
