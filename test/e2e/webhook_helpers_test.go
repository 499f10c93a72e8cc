//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// The shipped webhook's names (deploy/webhook).
const (
	webhookNamespace = "nsguard-system"
	webhookAccount   = "nsguard-webhook"
	webhookName      = "names.nsguard.io"
	webhookConfig    = "nsguard-webhook"
)

// shippedWebhook is what deploy/webhook-without-cert-manager renders: the Deployment's
// container and the ValidatingWebhookConfiguration, as a user applies them.
type shippedWebhook struct {
	container corev1.Container
	config    *admissionregistrationv1.ValidatingWebhookConfiguration
}

func readShippedWebhook(t *testing.T, cp *cluster.ControlPlane) shippedWebhook {
	t.Helper()
	out, err := cp.Kubectl(t.Context(), "kustomize", filepath.Join(deployDir(t), "webhook-without-cert-manager"))
	if err != nil {
		t.Fatal(err)
	}
	var s shippedWebhook
	objs, err := cluster.DecodeManifests(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			s.container = o.Spec.Template.Spec.Containers[0]
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			s.config = o
		}
	}
	if s.config == nil || len(s.container.Args) == 0 {
		t.Fatalf("deploy/webhook-without-cert-manager renders no Deployment or ValidatingWebhookConfiguration:\n%s", out)
	}
	return s
}

// webhookStack is the nsguard webhook beside a control plane: the binary cmd/nsguard builds,
// run on the loopback as the shipped Deployment runs it (its arguments and environment, its
// ServiceAccount's RBAC), and registered with the shipped ValidatingWebhookConfiguration,
// whose clientConfig is a URL on the loopback with the test's CA in caBundle.
type webhookStack struct {
	cp      *cluster.ControlPlane
	cs      kubernetes.Interface
	shipped shippedWebhook
	dir     string
	caPEM   []byte // caBundle: the serving certificate and its CA
	crt     string
	key     string
	port    int
	kubecfg string // the webhook's own: its ServiceAccount's token
	d       *cluster.Daemon
	log     string
	// bin is the nsguard binary to run; empty: the suite's build of cmd/nsguard.
	bin string
	// serverName is the name the API server dials, when the certificate is made for the
	// Service's name (certs.sh) rather than the loopback's address.
	serverName string
}

func newWebhookStack(t *testing.T, cp *cluster.ControlPlane) *webhookStack {
	t.Helper()
	s := &webhookStack{cp: cp, cs: cp.Clientset(), dir: t.TempDir(), shipped: readShippedWebhook(t, cp)}
	crt, key, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.caPEM, s.crt, s.key = crt, filepath.Join(s.dir, "tls.crt"), filepath.Join(s.dir, "tls.key")
	for f, b := range map[string][]byte{s.crt: crt, s.key: key} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	token, err := cluster.ServiceAccountToken(t.Context(), s.cs, root, []string{"deploy/webhook/base/rbac.yaml"}, webhookNamespace, webhookAccount)
	if err != nil {
		t.Fatal(err)
	}
	s.kubecfg = filepath.Join(s.dir, "kubeconfig")
	if err := cp.WriteKubeconfigFor(s.kubecfg, token); err != nil {
		t.Fatal(err)
	}
	if s.port, err = freePort(); err != nil {
		t.Fatal(err)
	}
	s.log = filepath.Join(s.dir, "webhook.log")
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			b, _ := os.ReadFile(s.log)
			t.Logf("--- nsguard webhook log ---\n%s", tailLines(string(b), 60))
		}
	})
	return s
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (s *webhookStack) url() string { return "https://127.0.0.1:" + strconv.Itoa(s.port) + "/validate" }

// args are the shipped container's arguments with the loopback's address, port, files and
// kubeconfig, then extra.
func (s *webhookStack) args(kubeconfig string, extra ...string) []string {
	var out []string
	for _, a := range s.shipped.container.Args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "secure-port", "bind-address", "tls-cert-file", "tls-private-key-file", "kubeconfig":
			continue
		}
		out = append(out, a)
	}
	out = append(out, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(s.port),
		"--tls-cert-file="+s.crt, "--tls-private-key-file="+s.key, "--kubeconfig="+kubeconfig,
		"--shutdown-delay-duration=0")
	return append(out, extra...)
}

// start runs the webhook (stopping one that runs) with the shipped environment, and waits
// for /readyz when ready is set, or for /healthz.
func (s *webhookStack) start(t *testing.T, kubeconfig string, ready bool, extra ...string) {
	t.Helper()
	s.stop()
	if kubeconfig == "" {
		kubeconfig = s.kubecfg
	}
	// env execs nsguard in its place: the daemon's PID is the webhook's.
	args := []string{}
	for _, e := range s.shipped.container.Env {
		args = append(args, e.Name+"="+e.Value)
	}
	bin := s.bin
	if bin == "" {
		bin = nsguardCLI(t)
	}
	args = append(append(args, bin), s.args(kubeconfig, extra...)...)
	d, err := cluster.StartDaemon("nsguard-webhook", "/usr/bin/env", s.log, args...)
	if err != nil {
		t.Fatal(err)
	}
	s.d = d
	path := "/healthz"
	if ready {
		path = "/readyz"
	}
	start := time.Now()
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		if code, _ := s.get(path); code == http.StatusOK {
			return true, nil
		}
		if done, err := d.Exited(); done {
			t.Fatalf("nsguard webhook exited: %v\n%s", err, s.logText())
		}
		return false, nil
	}); err != nil {
		t.Fatalf("nsguard webhook not answering %s after %v:\n%s", path, time.Since(start), s.logText())
	}
}

func (s *webhookStack) stop() {
	s.d.Stop(5 * time.Second)
	s.d = nil
}

func (s *webhookStack) logText() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// get asks the webhook's HTTPS endpoint path, trusting its certificate as the API server does.
func (s *webhookStack) get(path string) (int, string) {
	code, body, _ := httpsGet(s.caPEM, s.serverName, "https://127.0.0.1:"+strconv.Itoa(s.port)+path)
	return code, body
}

// httpsGet asks url, trusting ca for serverName (empty: the URL's host), and returns the
// status, the body and the certificate the server presented.
func httpsGet(ca []byte, serverName, url string) (int, string, *x509.Certificate) {
	pool := tlsPool(ca)
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName}}}
	res, err := c.Get(url)
	if err != nil {
		return 0, err.Error(), nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var leaf *x509.Certificate
	if res.TLS != nil && len(res.TLS.PeerCertificates) > 0 {
		leaf = res.TLS.PeerCertificates[0]
	}
	return res.StatusCode, string(b), leaf
}

// register points the shipped configuration at url, with edit applied to its webhook.
func (s *webhookStack) register(t *testing.T, url string, edit func(*admissionregistrationv1.ValidatingWebhook)) {
	t.Helper()
	cfg := s.shipped.config.DeepCopy()
	wh := &cfg.Webhooks[0]
	wh.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: s.caPEM}
	if edit != nil {
		edit(wh)
	}
	api := s.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	old, err := api.Get(t.Context(), cfg.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(t.Context(), cfg, metav1.CreateOptions{})
	case err == nil:
		cfg.ResourceVersion = old.ResourceVersion
		_, err = api.Update(t.Context(), cfg, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// kubectl runs the built kubectl as a user at a terminal would, and returns its standard
// output and standard error apart, its exit status and how long it took.
func kubectlAs(t *testing.T, cp *cluster.ControlPlane, args ...string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), cp.KubectlPath(), append([]string{"--kubeconfig=" + cp.Kubeconfig,
		"--cache-dir=" + filepath.Join(cp.WorkDir(), "kubectl-cache")}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("kubectl %v: %v", args, err)
	}
	return out.String(), errb.String(), code, took
}

// admissionCounts are the API server's own counts of the webhook's calls.
type admissionCounts struct {
	calls, failedOpen, rejected, excluded, conditionErrors float64
}

func webhookCounts(t *testing.T, cp *cluster.ControlPlane) admissionCounts {
	t.Helper()
	page, err := cp.APIServerMetrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := "name=" + webhookName
	return admissionCounts{
		calls:      coredns.Sum(page, "apiserver_admission_webhook_request_total", n),
		failedOpen: coredns.Sum(page, "apiserver_admission_webhook_fail_open_count", n),
		rejected:   coredns.Sum(page, "apiserver_admission_webhook_rejection_count", n),
		excluded:   coredns.Sum(page, "apiserver_admission_match_condition_exclusions_total", n),
		// A matchCondition that fails to evaluate skips the webhook under failurePolicy Ignore.
		conditionErrors: coredns.Sum(page, "apiserver_admission_match_condition_evaluation_errors_total", n),
	}
}

func (a admissionCounts) minus(b admissionCounts) admissionCounts {
	return admissionCounts{a.calls - b.calls, a.failedOpen - b.failedOpen, a.rejected - b.rejected, a.excluded - b.excluded, a.conditionErrors - b.conditionErrors}
}

// warnings is a client-go warning handler that keeps what the API server warned of.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.got = append(w.got, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	got := w.got
	w.got = nil
	return got
}

// warnedClient is an admin client whose warnings w keeps.
func warnedClient(t *testing.T, cp *cluster.ControlPlane, w *warnings) kubernetes.Interface {
	t.Helper()
	rc := cp.RESTConfig()
	rc.WarningHandlerWithContext = w
	rc.WarningHandler = nil
	rc.QPS, rc.Burst = 1000, 2000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func tlsPool(ca []byte) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return pool
}

func tlsKeyPair(crt, key string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(crt, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}}, nil
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
