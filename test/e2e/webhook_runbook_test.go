//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/cluster"
)

// The name the API server dials for the shipped Service, and the one certs.sh certifies.
const webhookServiceName = "nsguard-webhook.nsguard-system.svc"

// TestWebhookRunbook runs docs/webhook.md's commands against a real API server: the
// cert-manager overlay renders with its CA injection; without cert-manager, kubectl apply -k, then certs.sh makes the Secret and caBundle,
// and the webhook serves the Secret's certificate, trusted by caBundle under the Service's
// name; certs.sh again rotates them, the old certificate trusted until the webhook has
// reloaded its files; and kubectl delete -k takes it all away, after which the API server
// calls nothing. Before certs.sh, and with no Pod serving, changes go through within the
// timeout. There is no node here: the API server cannot reach the Service's Pods, so
// TestWebhook registers the webhook by URL to hear its warnings.
func TestWebhookRunbook(t *testing.T) {
	cp := cluster.StartT(t, env.binDir)
	ctx := t.Context()
	deploy := deployDir(t)
	overlay := filepath.Join(deploy, "webhook-without-cert-manager")
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := cp.Kubectl(ctx, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// With cert-manager: the overlay adds the Issuers, the Certificates and the injection.
	_, rendered := render(t, filepath.Join(deploy, "webhook"))
	for _, want := range []string{"cert-manager.io/inject-ca-from: nsguard-system/nsguard-webhook", "kind: Certificate",
		"secretName: nsguard-webhook-tls", "- " + webhookServiceName + "\n", "failurePolicy: Ignore"} {
		if !bytes.Contains(rendered, []byte(want)) {
			t.Errorf("deploy/webhook renders without %q", want)
		}
	}

	// Without cert-manager: apply, and before certs.sh every change goes through.
	kubectl("apply", "-k", overlay)
	timeout := time.Duration(*readShippedWebhook(t, cp).config.Webhooks[0].TimeoutSeconds) * time.Second
	before := webhookCounts(t, cp)
	start := time.Now()
	kubectl("create", "namespace", "before-certs")
	if took := time.Since(start); took > timeout+time.Second {
		t.Errorf("with no Pod and no caBundle, a namespace took %v, over the timeout %v and a second", took, timeout)
	}

	certs := func() []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(overlay, "certs.sh"))
		cmd.Env = append(os.Environ(), "KUBECTL="+cp.KubectlPath(), "KUBECONFIG="+cp.Kubeconfig)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("certs.sh: %v\n%s", err, out)
		}
		t.Logf("certs.sh: %s", bytes.TrimSpace(out))
		return bundleOf(t, cp)
	}
	bundle := certs()
	if n := len(pemCerts(t, bundle)); n != 1 {
		t.Errorf("caBundle holds %d certificates after the first certs.sh, want 1", n)
	}
	// The webhook as the Pod runs it, with the Secret's files; verified as the API server
	// verifies it, under the Service's name.
	s := newWebhookStack(t, cp)
	first := s.useSecret(t, bundle)
	s.start(t, "", true)
	if got := webhookCounts(t, cp).minus(before); got.failedOpen < 1 {
		t.Errorf("the namespace made before certs.sh: %+v; want it failed open", got)
	}

	// Rotation: the new CA joins the old in caBundle; the old certificate is trusted until
	// the webhook reloads the files kubelet updates, and the new one is after.
	bundle = certs()
	cas := pemCerts(t, bundle)
	if len(cas) != 2 || !cas[1].Equal(pemCerts(t, s.caPEM)[0]) {
		t.Fatalf("caBundle after rotation holds %d certificates; want the new CA, then the old", len(cas))
	}
	s.caPEM = bundle
	if code, body, leaf := httpsGet(bundle, s.serverName, s.hostURL("/readyz")); code != http.StatusOK || !leaf.Equal(first) {
		t.Errorf("the old certificate under the rotated caBundle: %d %s", code, body)
	}
	second := s.useSecret(t, bundle)
	var leaf *x509.Certificate
	reloaded := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, false, func(context.Context) (bool, error) {
		var code int
		code, _, leaf = httpsGet(bundle, s.serverName, s.hostURL("/readyz"))
		if code != http.StatusOK && code != 0 {
			t.Fatalf("/readyz %d during the reload", code)
		}
		return leaf != nil && leaf.Equal(second), nil
	}); err != nil {
		t.Fatalf("the webhook still serves the old certificate %v after its files changed:\n%s", time.Since(reloaded), tailLines(s.logText(), 20))
	}
	t.Logf("the webhook served the rotated certificate %v after its files changed, without a restart", time.Since(reloaded).Round(time.Millisecond))

	// Taking it away: nothing of it is left, and the API server calls nothing.
	kubectl("delete", "validatingwebhookconfiguration", webhookConfig)
	// This control plane has no namespace controller (it runs on the loopback, where the
	// controller manager's endpoint reconciler refuses to): its work on nsguard-system is
	// done first, then delete -k removes the rest as on a cluster.
	if err := cluster.FinalizeNamespaceDeletion(ctx, cp.Clientset(), webhookNamespace); err != nil {
		t.Fatal(err)
	}
	kubectl("delete", "-k", overlay, "--ignore-not-found")
	rbac := cp.Clientset().RbacV1()
	for what, err := range map[string]error{
		"ValidatingWebhookConfiguration": get(cp.Clientset().AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhookConfig, metav1.GetOptions{})),
		"ClusterRole":                    get(rbac.ClusterRoles().Get(ctx, webhookAccount, metav1.GetOptions{})),
		"ClusterRoleBinding":             get(rbac.ClusterRoleBindings().Get(ctx, webhookAccount, metav1.GetOptions{})),
	} {
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s nsguard-webhook after kubectl delete -k: %v", what, err)
		}
	}
	// The API server drops the configuration through an informer: soon, not at once.
	i := 0
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		before := webhookCounts(t, cp)
		kubectl("create", "namespace", "after-removal-"+itoa(i), "--dry-run=server")
		i++
		got := webhookCounts(t, cp).minus(before)
		return got.calls == 0 && got.failedOpen == 0, nil
	}); err != nil {
		t.Fatal("30s after kubectl delete -k, the API server still calls the webhook")
	}
}

func get[T any](_ T, err error) error { return err }

// useSecret writes the certificate and key certs.sh put in the Secret where the webhook reads
// them, as kubelet does for the Pod, trusts bundle under the Service's name, and returns the
// certificate.
func (s *webhookStack) useSecret(t *testing.T, bundle []byte) *x509.Certificate {
	t.Helper()
	sec, err := s.cs.CoreV1().Secrets(webhookNamespace).Get(t.Context(), "nsguard-webhook-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sec.Type != "kubernetes.io/tls" {
		t.Errorf("Secret nsguard-webhook-tls is of type %s, want kubernetes.io/tls", sec.Type)
	}
	// The key first: until both match, the webhook keeps the pair it has.
	for _, f := range []struct{ path, key string }{{s.key, "tls.key"}, {s.crt, "tls.crt"}} {
		if err := os.WriteFile(f.path, sec.Data[f.key], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.caPEM, s.serverName = bundle, webhookServiceName
	leaf := pemCerts(t, sec.Data["tls.crt"])[0]
	pool := tlsPool(bundle)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: webhookServiceName + ".cluster.local"}); err != nil {
		t.Errorf("the certificate does not hold the Service's full name: %v", err)
	}
	return leaf
}

func (s *webhookStack) hostURL(path string) string { return "https://127.0.0.1:" + itoa(s.port) + path }

func bundleOf(t *testing.T, cp *cluster.ControlPlane) []byte {
	t.Helper()
	cfg, err := cp.Clientset().AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(t.Context(), webhookConfig, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Webhooks[0].ClientConfig.CABundle
}

func pemCerts(t *testing.T, b []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return out
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
}
