//go:build e2e

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// deployDir is deploy/ of this checkout.
func deployDir(t *testing.T) string {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "deploy")
}

// render runs kubectl kustomize on dir and returns the manifests, also written to a file.
func render(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	out, err := env.cp.Kubectl(t.Context(), "kustomize", dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, out
}

// The overlays render, and the API server accepts every object they make (server-side
// dry run: admission, validation and defaulting, nothing stored). These are the
// runbook's commands.
func TestDeployManifestsDryRun(t *testing.T) {
	deploy := deployDir(t)
	for _, dir := range []string{"kubernetes", "kubernetes-refuse", "kubernetes-events", "kubernetes-namespace-events", "kubernetes/base"} {
		t.Run(dir, func(t *testing.T) {
			path, out := render(t, filepath.Join(deploy, dir))
			res, err := env.cp.Kubectl(t.Context(), "apply", "--dry-run=server", "-f", path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(res, []byte("deployment.apps/coredns")) {
				t.Errorf("the dry run did not reach the Deployment:\n%s", res)
			}
			// The -k form the runbook uses gives the same objects.
			if _, err := env.cp.Kubectl(t.Context(), "apply", "--dry-run=server", "-k", filepath.Join(deploy, dir)); err != nil {
				t.Fatal(err)
			}
			if dir == "kubernetes/base" {
				return
			}
			for _, want := range []string{"image: registry.example.com/platform/nsguard/coredns:v1.15.0", "nsguard cluster.local {", "runAsUser: 65532"} {
				if !bytes.Contains(out, []byte(want)) {
					t.Errorf("%s renders without %q", dir, want)
				}
			}
			mode := "mode log"
			if dir == "kubernetes-refuse" {
				mode = "mode refuse"
			}
			if !regexp.MustCompile(`(?m)^\s+nsguard cluster\.local \{\n\s+` + mode + `\n`).Match(out) {
				t.Errorf("%s: the Corefile's nsguard block is not in %s:\n%s", dir, mode, out)
			}
		})
	}
	// Rolling back to stock CoreDNS removes nsguard's own RBAC.
	if _, err := env.cp.Kubectl(t.Context(), "delete", "--dry-run=server", "--ignore-not-found",
		"clusterrole,clusterrolebinding", "system:coredns-nsguard", "system:coredns-nsguard-events", "system:coredns-nsguard-namespace-events"); err != nil {
		t.Fatal(err)
	}
}

// nsguard's ClusterRole grants list and watch, on exactly the three kinds its view reads;
// Events get a role of their own, which only the events overlay adds: create and patch.
func TestDeployClusterRoleLeastPrivilege(t *testing.T) {
	roles := func(dir string) map[string]*rbacv1.ClusterRole {
		_, out := render(t, filepath.Join(deployDir(t), dir))
		found := map[string]*rbacv1.ClusterRole{}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
		for {
			var obj rbacv1.ClusterRole
			err := dec.Decode(&obj)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if obj.Kind == "ClusterRole" {
				found[obj.Name] = &obj
			}
		}
		// Each role is bound to CoreDNS's service account.
		for name := range found {
			if !regexp.MustCompile(`(?s)kind: ClusterRoleBinding\nmetadata:\n(?:  .*\n)*  name: ` + regexp.QuoteMeta(name) + `\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: ` + regexp.QuoteMeta(name) + `\nsubjects:\n- kind: ServiceAccount\n  name: coredns\n  namespace: kube-system\n`).Match(out) {
				t.Errorf("%s: no ClusterRoleBinding of %s to kube-system/coredns:\n%s", dir, name, out)
			}
		}
		return found
	}
	grants := func(role *rbacv1.ClusterRole) (verbs, resources []string) {
		for _, r := range role.Rules {
			if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
				t.Errorf("rule %v: unexpected resourceNames or nonResourceURLs", r)
			}
			verbs = append(verbs, r.Verbs...)
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					resources = append(resources, g+"/"+res)
				}
			}
		}
		slices.Sort(verbs)
		sort.Strings(resources)
		return slices.Compact(verbs), resources
	}
	tests := []struct {
		dir, role        string
		verbs, resources []string
	}{
		{"kubernetes", "system:coredns-nsguard", []string{"list", "watch"}, []string{"/namespaces", "/pods", "/services", "discovery.k8s.io/endpointslices"}},
		{"kubernetes-events", "system:coredns-nsguard-events", []string{"create", "patch"}, []string{"events.k8s.io/events"}},
		{"kubernetes-namespace-events", "system:coredns-nsguard-namespace-events", []string{"create", "get", "patch"}, []string{"/namespaces", "events.k8s.io/events"}},
	}
	for _, tc := range tests {
		role := roles(tc.dir)[tc.role]
		if role == nil {
			t.Fatalf("no ClusterRole %s in %s", tc.role, tc.dir)
		}
		if verbs, resources := grants(role); !slices.Equal(verbs, tc.verbs) || !slices.Equal(resources, tc.resources) {
			t.Errorf("%s grants %v on %v, want exactly %v on %v", tc.role, verbs, resources, tc.verbs, tc.resources)
		}
	}
	if _, ok := roles("kubernetes")["system:coredns-nsguard-events"]; ok {
		t.Error("the default overlay grants Events; only the events overlay may")
	}
}

// metricName finds the nsguard metrics a PromQL expression queries.
var metricName = regexp.MustCompile(`\bcoredns_nsguard_[a-z_]+\b`)

// Every nsguard metric the dashboard and the alerting rules query exists on the
// plugin's own /metrics page, once CoreDNS has answered in mode log and mode refuse.
func TestDeployDashboardAndRulesMetrics(t *testing.T) {
	deploy := deployDir(t)
	if err := cluster.ApplyShadow(t.Context(), env.cp.Clientset()); err != nil {
		t.Fatal(err)
	}

	// Mode log with a view: apex answers logged, a repeat suppressed, a shadow logged.
	logged := startDNS(t, "127.53.1.50", coredns.Config{NSGuard: withView()})
	logged.waitSynced(t)
	logged.expect(t, "my-app", trapped)
	logged.waitRcode(t, "primary.db.new-namespace-1.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess)
	// Mode refuse with a view that cannot reach its API server: refusals and view skips.
	refused := startDNS(t, "127.53.1.51", coredns.Config{NSGuard: "nsguard {\n        mode refuse\n        endpoint http://127.0.0.1:1\n        kubeconfig " + env.cp.Kubeconfig + "\n    }"})
	refused.waitRcode(t, apex, dns.TypeA, dns.RcodeNameError)
	// The live findings' gauge is there once the view's first look is done.
	waitFor(t, 10*time.Second, "the findings gauge", func() bool { _, ok := logged.captures(t); return ok })

	have := map[string]bool{}
	for _, p := range []*pod{logged, refused} {
		body, err := p.dns.Scrape()
		if err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("/metrics: %v", err)
		}
		for name, f := range families {
			if strings.HasPrefix(name, "coredns_nsguard_") && len(f.GetMetric()) > 0 {
				have[name] = true
			}
		}
	}

	dashboard, err := os.ReadFile(filepath.Join(deploy, "grafana", "nsguard-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(dashboard, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	var dashMetrics []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			dashMetrics = append(dashMetrics, metricName.FindAllString(tg.Expr, -1)...)
		}
	}
	rules, err := os.ReadFile(filepath.Join(deploy, "prometheus", "nsguard-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ruleMetrics := metricName.FindAllString(string(rules), -1)

	// Every metric nsguard has is on the dashboard, and every one queried exists.
	for _, name := range []string{"coredns_nsguard_namespace_apex_answers_total", "coredns_nsguard_endpoint_shadows_total",
		"coredns_nsguard_log_lines_suppressed_total", "coredns_nsguard_view_synced", "coredns_nsguard_view_skips_total",
		"coredns_nsguard_view_stale", "coredns_nsguard_view_stale_decisions_total", "coredns_nsguard_findings"} {
		if !have[name] {
			t.Errorf("%s is not on /metrics", name)
		}
		if !slices.Contains(dashMetrics, name) {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
	for _, name := range append(dashMetrics, ruleMetrics...) {
		if !have[name] {
			t.Errorf("%s is queried by the dashboard or the rules but is not on nsguard's /metrics", name)
		}
	}
	for _, name := range []string{"coredns_nsguard_namespace_apex_answers_total", "coredns_nsguard_view_synced", "coredns_nsguard_view_stale", "coredns_nsguard_findings"} {
		if !slices.Contains(ruleMetrics, name) {
			t.Errorf("no alerting rule uses %s", name)
		}
	}
	if t.Failed() {
		keys := make([]string, 0, len(have))
		for k := range have {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Logf("on /metrics: %v", keys)
	}
}

// The runbook's audit step, as an operator runs it: the CLI against the live cluster.
func TestDeployRunbookAudit(t *testing.T) {
	bin := nsguardCLI(t)
	out, err := exec.CommandContext(t.Context(), bin, "audit", "--kubeconfig", env.cp.Kubeconfig).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("nsguard audit: %v, want exit status 1 (findings)\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("namespace-captures-service")) || !bytes.Contains(out, []byte("namespace my-app captures")) {
		t.Errorf("nsguard audit does not report the capture:\n%s", out)
	}
	// explain exits 1 too: the incident's my-app does not reach what it meant.
	out, err = exec.CommandContext(t.Context(), bin, "explain", "my-app", "--from", "new-namespace-1", "--kubeconfig", env.cp.Kubeconfig).CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !bytes.Contains(out, []byte("2  my-app.svc.cluster.local.")) ||
		!bytes.Contains(out, []byte("most likely meant: Service my-app in new-namespace-2")) {
		t.Errorf("nsguard explain: %v, want exit status 1 and the namespace apex candidate\n%s", err, out)
	}
	// Step 5's check of rcode REFUSED: it stops glibc, musl and c-ares at the namespace apex.
	out, _ = exec.CommandContext(t.Context(), bin, "explain", "my-app", "-n", "new-namespace-1", "--mode", "refuse", "--rcode", "REFUSED",
		"--kubeconfig", env.cp.Kubeconfig).CombinedOutput()
	for _, want := range []string{"REFUSED  <- glibc, musl, c-ares stop", "c-ares 1.18.1  candidate 2: fails", "go             candidate 4: the upstream's answer"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("nsguard explain --mode refuse --rcode REFUSED lacks %q:\n%s", want, out)
		}
	}
}
