//go:build e2e

package e2e

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/nsguard/nsguard/test/e2e/cluster"
)

// The warnings kubectl prints, whole: what nsguard audit would say, and the fix.
const (
	warnNamespace = `Warning: nsguard: namespace my-app captures the short name of Service my-app in new-namespace-2: clients elsewhere that type "my-app" get the namespace; fix: rename namespace my-app, or use my-app.new-namespace-2`
	warnService   = `Warning: nsguard: namespace my-app captures the short name of Service my-app in new-namespace-2, team-a: clients elsewhere that type "my-app" get the namespace; fix: use my-app.team-a, or rename or delete namespace my-app`
	warnDelete    = `Warning: nsguard: once Service team-a/my-app is deleted, clients in team-a that type "my-app" get namespace my-app; fix: clients in team-a use my-app.new-namespace-2, or rename or delete namespace my-app`
	warnReserved  = `Warning: nsguard: namespace svc is named like a label of the DNS schema: svc.svc.cluster.local reads both as namespace apex and as schema names below it; fix: rename namespace svc`
	denyNamespace = `Error from server (Forbidden): admission webhook "names.nsguard.io" denied the request: nsguard: namespace billing captures the short name of Service billing in team-a: clients elsewhere that type "billing" get the namespace; fix: rename namespace billing, or use billing.team-a`
)

// TestWebhook: the real kube-apiserver calls nsguard webhook over TLS on the loopback, as
// the shipped manifests register and run it (its RBAC, arguments, rules, matchConditions,
// timeout). A user's kubectl prints its warnings; --deny refuses the collisions and nothing
// else; and a webhook not synced, stopped, hung or answering garbage lets every change
// through within the timeout.
func TestWebhook(t *testing.T) {
	cp := cluster.StartT(t, env.binDir)
	s := newWebhookStack(t, cp)
	for _, step := range []struct {
		name string
		run  func(*testing.T, *webhookStack)
	}{
		{"Warnings", webhookWarnings},
		{"Deny", webhookDeny},
		{"NotSynced", webhookNotSynced},
		{"Stopped", webhookStopped},
		{"Hung", webhookHung},
		{"Garbage", webhookGarbage},
		{"WrongUID", webhookWrongUID},
	} {
		if !t.Run(step.name, func(t *testing.T) { step.run(t, s) }) {
			t.FailNow() // each step stands on the last
		}
	}
}

// kubectlOK runs kubectl, which must succeed; it returns standard error.
func kubectlOK(t *testing.T, s *webhookStack, args ...string) string {
	t.Helper()
	out, errs, code, took := kubectlAs(t, s.cp, args...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	t.Logf("kubectl %s (%v): %s%s", strings.Join(args, " "), took.Round(time.Millisecond), out, errs)
	return errs
}

// exists reports whether kubectl get finds the object.
func exists(t *testing.T, s *webhookStack, args ...string) bool {
	t.Helper()
	_, _, code, _ := kubectlAs(t, s.cp, append([]string{"get"}, args...)...)
	return code == 0
}

func webhookWarnings(t *testing.T, s *webhookStack) {
	// Before the webhook: the incident's Service, and the namespaces of its clients.
	for _, args := range [][]string{
		{"create", "namespace", "new-namespace-1"}, {"create", "namespace", "new-namespace-2"}, {"create", "namespace", "team-a"},
		{"-n", "new-namespace-2", "create", "service", "clusterip", "my-app", "--tcp=80:8080"},
	} {
		kubectlOK(t, s, args...)
	}
	start := time.Now()
	s.start(t, "", true)
	t.Logf("nsguard webhook ready (informers synced) %v after its start", time.Since(start).Round(time.Millisecond))
	s.register(t, s.url(), nil)
	var last string
	waitEffective(t, s, func() bool {
		out, errs, _, _ := kubectlAs(t, s.cp, "create", "namespace", "my-app", "--dry-run=server")
		last = out + errs
		return strings.Contains(errs, "Warning: nsguard:")
	})
	t.Logf("the first dry run that reached the webhook: %s", last)
	before := webhookCounts(t, s.cp)

	// A clean change prints nothing.
	if errs := kubectlOK(t, s, "create", "namespace", "team-b"); errs != "" {
		t.Errorf("a clean namespace: kubectl printed %q", errs)
	}
	if errs := kubectlOK(t, s, "-n", "team-b", "create", "service", "clusterip", "web", "--tcp=80"); errs != "" {
		t.Errorf("a clean Service: kubectl printed %q", errs)
	}
	if errs := kubectlOK(t, s, "-n", "team-b", "delete", "service", "web"); errs != "" {
		t.Errorf("a clean Service's delete: kubectl printed %q", errs)
	}

	// The incident: namespace my-app while Service my-app lives in new-namespace-2.
	if errs := kubectlOK(t, s, "create", "namespace", "my-app"); errs != warnNamespace+"\n" {
		t.Errorf("kubectl create namespace my-app printed\n%s\nwant\n%s", errs, warnNamespace)
	}
	if !exists(t, s, "namespace", "my-app") {
		t.Error("the namespace was not created")
	}
	// The Service direction: my-app made in team-a, whose clients elsewhere get the namespace.
	if errs := kubectlOK(t, s, "-n", "team-a", "create", "service", "clusterip", "my-app", "--tcp=80:8080"); errs != warnService+"\n" {
		t.Errorf("kubectl create service printed\n%s\nwant\n%s", errs, warnService)
	}
	// The DELETE direction: team-a's clients lose their Service and fall to the namespace.
	if errs := kubectlOK(t, s, "-n", "team-a", "delete", "service", "my-app"); errs != warnDelete+"\n" {
		t.Errorf("kubectl delete service printed\n%s\nwant\n%s", errs, warnDelete)
	}
	if exists(t, s, "-n", "team-a", "service", "my-app") {
		t.Error("the Service was not deleted")
	}
	// A reserved name; and a server-side dry run, as a GitOps diff or CI job runs it,
	// warns and makes nothing.
	if errs := kubectlOK(t, s, "create", "namespace", "svc"); errs != warnReserved+"\n" {
		t.Errorf("kubectl create namespace svc printed\n%s\nwant\n%s", errs, warnReserved)
	}
	kubectlOK(t, s, "-n", "team-a", "create", "service", "clusterip", "billing", "--tcp=80")
	if errs := kubectlOK(t, s, "create", "namespace", "billing", "--dry-run=server"); !strings.HasPrefix(errs, "Warning: nsguard: namespace billing captures") {
		t.Errorf("a server-side dry run printed %q", errs)
	}
	if exists(t, s, "namespace", "billing") {
		t.Error("the dry run made the namespace")
	}

	got := webhookCounts(t, s.cp).minus(before)
	t.Logf("the API server's counts for %s: %.0f calls, %.0f failed open, %.0f rejected", webhookName, got.calls, got.failedOpen, got.rejected)
	if got.calls < 9 || got.failedOpen != 0 || got.rejected != 0 || got.conditionErrors != 0 {
		t.Errorf("API server counts %+v: want 9 calls or more, none failed open, rejected, or a matchCondition in error", got)
	}
	// The webhook logs what it told, and to whom.
	if log := s.logText(); !strings.Contains(log, `"Told of a finding" decision="warned" operation="CREATE" kind="Namespace" namespace="" name="my-app" user="admin"`) {
		t.Errorf("no log line of the warning:\n%s", tailLines(log, 20))
	}
}

// waitEffective waits for the API server to call the webhook as now registered: it reads
// its configurations through an informer.
func waitEffective(t *testing.T, s *webhookStack, called func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return called(), nil }); err != nil {
		page, _ := s.cp.APIServerMetrics(t.Context())
		var lines []string
		for _, l := range strings.Split(page, "\n") {
			if strings.Contains(l, "apiserver_admission_webhook") || strings.Contains(l, "apiserver_admission_match_condition") {
				lines = append(lines, l)
			}
		}
		t.Fatalf("the API server did not call the webhook as registered within 30s; its admission metrics:\n%s\nthe webhook's log:\n%s",
			strings.Join(lines, "\n"), tailLines(s.logText(), 20))
	}
}

// --deny refuses the CREATEs it warns of, and nothing else.
func webhookDeny(t *testing.T, s *webhookStack) {
	kubectlOK(t, s, "create", "namespace", "team-d")
	kubectlOK(t, s, "-n", "team-d", "create", "service", "clusterip", "my-app", "--tcp=80") // warned: for the DELETE below
	s.start(t, "", true, "--deny")
	before := webhookCounts(t, s.cp)
	_, errs, code, _ := kubectlAs(t, s.cp, "create", "namespace", "billing")
	if code == 0 || strings.TrimSpace(errs) != denyNamespace {
		t.Errorf("kubectl create namespace billing: exit %d\n%s\nwant\n%s", code, errs, denyNamespace)
	}
	if exists(t, s, "namespace", "billing") {
		t.Error("the refused namespace exists")
	}
	_, errs, code, _ = kubectlAs(t, s.cp, "-n", "team-b", "create", "service", "clusterip", "my-app", "--tcp=80")
	if code == 0 || !strings.Contains(errs, `denied the request: nsguard: namespace my-app captures the short name of Service my-app in new-namespace-2, team-b`) {
		t.Errorf("kubectl create service my-app: exit %d: %s", code, errs)
	}
	_, errs, code, _ = kubectlAs(t, s.cp, "create", "namespace", "pod")
	if code == 0 || !strings.Contains(errs, "denied the request: nsguard: namespace pod is named like a label of the DNS schema") {
		t.Errorf("kubectl create namespace pod: exit %d: %s", code, errs)
	}
	// Nothing else: clean changes, and a DELETE, which warns.
	if errs := kubectlOK(t, s, "create", "namespace", "team-c"); errs != "" {
		t.Errorf("a clean namespace under --deny: %q", errs)
	}
	if errs := kubectlOK(t, s, "-n", "team-c", "create", "service", "clusterip", "web", "--tcp=80"); errs != "" {
		t.Errorf("a clean Service under --deny: %q", errs)
	}
	if errs := kubectlOK(t, s, "-n", "team-d", "delete", "service", "my-app"); !strings.HasPrefix(errs, "Warning: nsguard: once Service team-d/my-app is deleted") {
		t.Errorf("a DELETE under --deny printed %q", errs)
	}
	got := webhookCounts(t, s.cp).minus(before)
	if got.rejected != 3 || got.failedOpen != 0 {
		t.Errorf("API server counts %+v: want 3 rejected, none failed open", got)
	}
}

// failOpen makes changes the webhook would warn of, and a clean one, with the webhook as
// the step left it: each must succeed, unwarned, within the registration's timeout and a
// second. It returns how long the slowest took.
func failOpen(t *testing.T, s *webhookStack, wantFailedOpen bool) {
	t.Helper()
	timeout := time.Duration(*s.shipped.config.Webhooks[0].TimeoutSeconds) * time.Second
	w := &warnings{}
	cs := warnedClient(t, s.cp, w)
	ctx := t.Context()
	n := 0
	change := func(what string, do func(context.Context, kubernetes.Interface) error) {
		t.Helper()
		n++
		start := time.Now()
		err := do(ctx, cs)
		took := time.Since(start)
		t.Logf("%s: %v", what, took.Round(time.Millisecond))
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		if took > timeout+time.Second {
			t.Errorf("%s took %v, over the webhook's timeout %v and a second", what, took.Round(time.Millisecond), timeout)
		}
		if got := w.take(); len(got) > 0 {
			t.Errorf("%s: warned %q", what, got)
		}
	}
	suffix := strings.ToLower(strings.ReplaceAll(t.Name()[strings.LastIndex(t.Name(), "/")+1:], "_", "-"))
	before := webhookCounts(t, s.cp)
	nsName := "my-app-" + suffix
	change("create Service "+nsName+" (its namespace comes next)", func(ctx context.Context, cs kubernetes.Interface) error {
		_, err := cs.CoreV1().Services("team-b").Create(ctx, clusterIP("team-b", nsName), metav1.CreateOptions{})
		return err
	})
	change("create namespace "+nsName+", which captures it", func(ctx context.Context, cs kubernetes.Interface) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName}}, metav1.CreateOptions{})
		return err
	})
	change("create Service my-app in team-b, captured", func(ctx context.Context, cs kubernetes.Interface) error {
		_, err := cs.CoreV1().Services("team-b").Create(ctx, clusterIP("team-b", "my-app"), metav1.CreateOptions{})
		return err
	})
	change("delete Service my-app of team-b", func(ctx context.Context, cs kubernetes.Interface) error {
		return cs.CoreV1().Services("team-b").Delete(ctx, "my-app", metav1.DeleteOptions{})
	})
	change("create clean namespace", func(ctx context.Context, cs kubernetes.Interface) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clean-" + suffix}}, metav1.CreateOptions{})
		return err
	})
	// And as a user sees it.
	if errs := kubectlOK(t, s, "create", "namespace", "svc-"+suffix); errs != "" {
		t.Errorf("kubectl printed %q", errs)
	}
	got := webhookCounts(t, s.cp).minus(before)
	t.Logf("the API server's counts for %s: %.0f calls, %.0f failed open", webhookName, got.calls, got.failedOpen)
	if wantFailedOpen && got.failedOpen < float64(n) || !wantFailedOpen && got.failedOpen != 0 {
		t.Errorf("%.0f calls failed open for %d changes; want %v", got.failedOpen, n+1, wantFailedOpen)
	}
}

func clusterIP(ns, name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
}

// Not synced: the webhook cannot list (its kubeconfig points at nothing). It serves, its
// /readyz says why not, and it lets every change through unchecked, at once.
func webhookNotSynced(t *testing.T, s *webhookStack) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	nowhere := s.dir + "/nowhere.kubeconfig"
	writeFile(t, nowhere, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:"+itoa(port)+"'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n")
	s.start(t, nowhere, false, "--deny")
	if code, body := s.get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not synced") {
		t.Errorf("/readyz: %d %s", code, body)
	}
	failOpen(t, s, false)
}

// Stopped: nothing listens; the API server's call fails at once.
func webhookStopped(t *testing.T, s *webhookStack) {
	s.stop()
	failOpen(t, s, true)
}

// Hung: a server that takes the connection and never answers; the API server gives up
// after the registration's timeout.
func webhookHung(t *testing.T, s *webhookStack) {
	var calls atomic.Int64
	release := make(chan struct{})
	srv := s.fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	s.register(t, srv, nil)
	waitEffective(t, s, func() bool { dryRunNamespace(t, s); return calls.Load() > 0 })
	failOpen(t, s, true)
}

// Garbage: a 200 whose body is no AdmissionReview.
func webhookGarbage(t *testing.T, s *webhookStack) {
	var calls atomic.Int64
	s.register(t, s.fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("\x00garbage{"))
	}), nil)
	waitEffective(t, s, func() bool { dryRunNamespace(t, s); return calls.Load() > 0 })
	failOpen(t, s, true)
}

// WrongUID: a well-formed review that answers another request and refuses it.
func webhookWrongUID(t *testing.T, s *webhookStack) {
	var calls atomic.Int64
	s.register(t, s.fakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"not-yours","allowed":false,"warnings":["from nowhere"]}}`))
	}), nil)
	waitEffective(t, s, func() bool { dryRunNamespace(t, s); return calls.Load() > 0 })
	failOpen(t, s, true)
}

func dryRunNamespace(t *testing.T, s *webhookStack) {
	_, _, _, _ = kubectlAs(t, s.cp, "create", "namespace", "probe", "--dry-run=server")
}

// fakeServer serves handler over TLS with the webhook's certificate on a port of its own,
// for the length of the test, and returns its URL.
func (s *webhookStack) fakeServer(t *testing.T, handler http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(handler)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	pair, err := tlsKeyPair(s.crt, s.key)
	if err != nil {
		t.Fatal(err)
	}
	srv.TLS = pair
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL + "/validate"
}
