//go:build e2e

package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nsguard/nsguard/test/e2e/cluster"
)

func TestMain(m *testing.M) { cluster.Run(m) }

func TestControlPlane(t *testing.T) {
	ctx := t.Context()
	bin := buildTools(t)

	start := time.Now()
	cp, err := cluster.Start(ctx, bin, t.TempDir())
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(cp.Stop)
	t.Logf("control plane ready in %v at %s", time.Since(start).Round(time.Millisecond), cp.Server)
	pids := children(t)
	if len(pids) != 2 {
		t.Fatalf("want 2 children (etcd, kube-apiserver), got %v", pids)
	}

	cs := cp.Clientset()
	for range 2 { // the second call checks that ApplyIncident is idempotent
		if err := cluster.ApplyIncident(ctx, cs, "127.0.0.1"); err != nil {
			t.Fatalf("ApplyIncident: %v", err)
		}
	}
	checkFixtures(t, cs)
	checkKubectl(t, cp)

	if err := cluster.FinalizeNamespaceDeletion(ctx, cs, cluster.LegacyNamespace); err != nil {
		t.Fatalf("FinalizeNamespaceDeletion: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, cluster.LegacyNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("namespace %s after finalize: want NotFound, got %v", cluster.LegacyNamespace, err)
	}
	if svcs := services(t, cs, cluster.LegacyNamespace); len(svcs.Items) != 0 {
		t.Fatalf("services left in deleted namespace: %v", svcs.Items)
	}

	checkRestart(t, cp)

	start = time.Now()
	cp.Stop()
	t.Logf("stopped in %v", time.Since(start).Round(time.Millisecond))
	cp.Stop() // idempotent
	if left := children(t); len(left) != 0 {
		t.Fatalf("children left after Stop: %v", left)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
}

// buildTools fails, never skips: the e2e suite is meaningless without them.
func buildTools(t *testing.T) string {
	ctx := t.Context()
	if d, ok := t.Deadline(); ok { // stop before go test's own timeout panics
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		t.Cleanup(cancel)
	}
	start := time.Now()
	bin, err := cluster.BuildTools(ctx)
	if err != nil {
		t.Fatalf("build tools: %v", err)
	}
	t.Logf("tools in %s (%v)", bin, time.Since(start).Round(time.Millisecond))
	return bin
}

func checkFixtures(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range nss.Items {
		names = append(names, ns.Name)
	}
	for _, want := range []string{cluster.LegacyNamespace, cluster.ClientNamespace, cluster.AppNamespace} {
		if !slices.Contains(names, want) {
			t.Errorf("namespace %s missing from %v", want, names)
		}
	}

	app, err := cs.CoreV1().Services(cluster.AppNamespace).Get(ctx, cluster.AppService, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if app.Spec.ClusterIP != cluster.AppClusterIP || app.Spec.Ports[0].Port != cluster.AppPort {
		t.Errorf("service %s: clusterIP %s ports %v", cluster.AppService, app.Spec.ClusterIP, app.Spec.Ports)
	}
	eps, err := cs.DiscoveryV1().EndpointSlices(cluster.AppNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: "kubernetes.io/service-name=" + cluster.AppService + ",endpointslice.kubernetes.io/managed-by=" + cluster.ManagedBy,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(eps.Items) != 1 || eps.Items[0].Endpoints[0].Addresses[0] != cluster.AppEndpointIP {
		t.Errorf("endpointslices for %s: %+v", cluster.AppService, eps.Items)
	}

	got := map[string]string{}
	for _, s := range services(t, cs, cluster.LegacyNamespace).Items {
		if s.Spec.Type == corev1.ServiceTypeExternalName {
			got[s.Name] = s.Spec.ExternalName
		}
	}
	want := map[string]string{cluster.OtherApp1: cluster.OtherApp1Target, cluster.OtherApp2: cluster.OtherApp2Target}
	if len(got) != len(want) || got[cluster.OtherApp1] != want[cluster.OtherApp1] || got[cluster.OtherApp2] != want[cluster.OtherApp2] {
		t.Errorf("ExternalName services in %s: got %v, want %v", cluster.LegacyNamespace, got, want)
	}

	pod, err := cs.CoreV1().Pods(cluster.ClientNamespace).Get(ctx, cluster.ClientPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP != "127.0.0.1" {
		t.Errorf("pod %s: phase %s podIP %q", cluster.ClientPod, pod.Status.Phase, pod.Status.PodIP)
	}
}

func checkKubectl(t *testing.T, cp *cluster.ControlPlane) {
	t.Helper()
	out, err := cp.Kubectl(t.Context(), "get", "ns", "-o", "name")
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{cluster.LegacyNamespace, cluster.ClientNamespace, cluster.AppNamespace} {
		if !strings.Contains(string(out), "namespace/"+ns+"\n") {
			t.Errorf("kubectl get ns: %s missing from\n%s", ns, out)
		}
	}
	// Checks the -X version flags: kubectl must parse the server's /version.
	out, err = cp.Kubectl(t.Context(), "version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		ServerVersion struct{ GitVersion string } `json:"serverVersion"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.ServerVersion.GitVersion != "v1.37.2" {
		t.Errorf("kubectl version: %v\n%s", err, out)
	}
}

func checkRestart(t *testing.T, cp *cluster.ControlPlane) {
	t.Helper()
	ctx := t.Context()
	start := time.Now()
	cp.StopAPIServer()
	t.Logf("apiserver stopped in %v", time.Since(start).Round(time.Millisecond))
	cp.StopAPIServer() // idempotent
	if len(children(t)) != 1 {
		t.Fatalf("after StopAPIServer want only etcd, got %v", children(t))
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := cp.Clientset().CoreV1().Namespaces().List(short, metav1.ListOptions{}); err == nil {
		t.Fatal("apiserver still answers after StopAPIServer")
	}
	start = time.Now()
	if err := cp.RestartAPIServer(ctx); err != nil {
		t.Fatalf("RestartAPIServer: %v", err)
	}
	t.Logf("apiserver restarted in %v", time.Since(start).Round(time.Millisecond))
	// Same URL and etcd: the old clientset sees the old data.
	if _, err := cp.Clientset().CoreV1().Services(cluster.AppNamespace).Get(ctx, cluster.AppService, metav1.GetOptions{}); err != nil {
		t.Fatalf("after restart: %v", err)
	}
}

func services(t *testing.T, cs kubernetes.Interface, ns string) *corev1.ServiceList {
	t.Helper()
	l, err := cs.CoreV1().Services(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// children lists the PIDs whose parent is this test binary, from /proc.
func children(t *testing.T) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	var pids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		// Fields after the last ')' (comm may hold anything): state ppid ...
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(self) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			pids = append(pids, pid)
		}
	}
	return pids
}
