//go:build e2e

package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// WebhookImage is deploy/webhook/base's image name: hack/check-webhook-image.sh's build of
// deploy/webhook/Dockerfile, under the name the overlay gives it.
const WebhookImage = "registry.example.com/platform/nsguard:v0.1.0"

// stepWebhook is docs/webhook.md on the node: the image as hack/check-webhook-image.sh
// builds it, deploy/webhook-without-cert-manager and certs.sh, the Deployment's two Pods
// Ready behind their PodDisruptionBudget, and the API server calling them through the
// Service (kube-proxy's rules, TLS under the Service's name): kubectl prints each
// warning whole, a clean change prints nothing; with no Pod left every change goes through
// within the timeout; and the runbook's removal leaves nothing. It uses names of its own and
// removes them.
func stepWebhook(t *testing.T) {
	ctx := t.Context()
	b := newBuilder(env.root, t.TempDir())
	bin := filepath.Join(t.TempDir(), "nsguard")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/nsguard")
	build.Dir, build.Env = env.root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/nsguard: %v\n%s", err, out)
	}
	key, err := fileKey(WebhookImage, bin, filepath.Join(env.root, "deploy", "webhook", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !b.cached(ctx, WebhookImage, key) {
		const tag = "nsguard-webhook:node"
		must(t, repoPath("hack/check-webhook-image.sh")+" "+tag)
		if err := b.importImage(ctx, tag, WebhookImage, key); err != nil {
			t.Fatal(err)
		}
	}

	overlay := repoPath("deploy/webhook-without-cert-manager")
	must(t, "kubectl apply -k "+overlay)
	must(t, overlay+"/certs.sh")
	must(t, "kubectl -n nsguard-system rollout status deployment/nsguard-webhook --timeout=3m")
	if got := strings.TrimSpace(kubectl(t, "-n", "nsguard-system", "get", "pdb", "nsguard-webhook", "-o", "jsonpath={.status.disruptionsAllowed}")); got != "1" {
		t.Errorf("the PodDisruptionBudget allows %q disruptions with two Ready Pods, want 1", got)
	}

	// The API server reads its configurations through an informer: wait for the first warning.
	waitWarned(t, "kubectl create namespace svc --dry-run=server", "Warning: nsguard: namespace svc is named like a label of the DNS schema")
	must(t, "kubectl -n new-namespace-2 create service clusterip shop --tcp=80")
	for _, c := range []struct{ line, want string }{
		{"kubectl create namespace webhook-clean", ""},
		{"kubectl create namespace shop", `Warning: nsguard: namespace shop captures the short name of Service shop in new-namespace-2: clients elsewhere that type "shop" get the namespace; fix: rename namespace shop, or use shop.new-namespace-2`},
		{"kubectl -n " + clientNS + " create service clusterip shop --tcp=80", `Warning: nsguard: namespace shop captures the short name of Service shop in ` + clientNS + `, new-namespace-2: clients elsewhere that type "shop" get the namespace; fix: use shop.` + clientNS + `, or rename or delete namespace shop`},
		{"kubectl -n " + clientNS + " delete service shop", `Warning: nsguard: once Service ` + clientNS + `/shop is deleted, clients in ` + clientNS + ` that type "shop" get namespace shop; fix: clients in ` + clientNS + ` use shop.new-namespace-2, or rename or delete namespace shop`},
	} {
		out := must(t, c.line)
		var warned []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "Warning:") {
				warned = append(warned, l)
			}
		}
		if want := []string{c.want}; c.want == "" && len(warned) > 0 || c.want != "" && strings.Join(warned, "\n") != c.want {
			t.Errorf("$ %s\nprinted the warnings %q, want %q", c.line, warned, want)
		}
	}
	if logs := kubectl(t, "-n", "nsguard-system", "logs", "-l", "app.kubernetes.io/name=nsguard-webhook", "--tail=-1"); !strings.Contains(logs, `"Told of a finding" decision="warned" operation="CREATE" kind="Namespace" namespace="" name="shop"`) {
		t.Errorf("no Pod logged the warning of namespace shop:\n%s", logs)
	}

	// No Pod left: failurePolicy Ignore lets every change through within the timeout.
	must(t, "kubectl -n nsguard-system scale deployment/nsguard-webhook --replicas=0")
	must(t, `for i in $(seq 120); do [ -z "$(kubectl -n nsguard-system get pods -l app.kubernetes.io/name=nsguard-webhook -o name)" ] && exit 0; sleep 1; done; exit 1`)
	before := failedOpen(t)
	start := time.Now()
	if out := must(t, "kubectl create namespace pod"); strings.Contains(out, "Warning:") {
		t.Errorf("with no webhook Pod, kubectl printed %q", out)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("with no webhook Pod, a namespace took %v; the timeout is 2s", took)
	}
	if failedOpen(t) <= before {
		t.Error("the API server did not count the call it let through")
	}

	// Take it away, as the runbook does; then the API server calls nothing.
	must(t, "kubectl delete validatingwebhookconfiguration nsguard-webhook")
	must(t, "kubectl delete -k "+overlay+" --ignore-not-found --timeout=3m")
	must(t, "kubectl delete namespace shop pod webhook-clean --timeout=3m")
	must(t, "kubectl -n new-namespace-2 delete service shop")
	var out string
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		out, _ = sh(t, "kubectl create namespace svc --dry-run=server")
		return !strings.Contains(out, "Warning:"), nil
	}); err != nil {
		t.Fatalf("30s after its removal the webhook still warns: %s", out)
	}
}

// waitWarned runs line until its output holds want, for up to 30 seconds.
func waitWarned(t *testing.T, line, want string) {
	t.Helper()
	start := time.Now()
	var out string
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		out, _ = sh(t, line)
		return strings.Contains(out, want), nil
	}); err != nil {
		t.Fatalf("$ %s\n%s\nthe API server did not call the webhook within 30s; its Pods:\n%s", line, out,
			kubectl(t, "-n", "nsguard-system", "logs", "-l", "app.kubernetes.io/name=nsguard-webhook", "--tail=20"))
	}
	t.Logf("$ %s (reached the webhook %v after its rollout)\n%s", line, time.Since(start).Round(time.Millisecond), out)
}

// failedOpen is the API server's count of the webhook's calls it let through.
func failedOpen(t *testing.T) float64 {
	t.Helper()
	page, err := env.node.CP.APIServerMetrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return coredns.Sum(page, "apiserver_admission_webhook_fail_open_count", "name=names.nsguard.io")
}
