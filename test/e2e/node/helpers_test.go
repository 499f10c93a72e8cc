//go:build e2e

package node

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// kubectl runs the built kubectl against the node and fails the test on an error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := env.node.CP.Kubectl(t.Context(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// apply applies YAML with kubectl.
func apply(t *testing.T, yaml string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), env.node.CP.KubectlPath(), "--kubeconfig="+env.node.CP.Kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(yaml)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n---\n%s", err, out, yaml)
	}
}

// clientPod is a resolver's Pod: /pause at rest, /lookup on kubectl exec. With nameserver, it
// is pointed at that server as kubelet's clusterDNS would point it (dnsPolicy None, the same
// search list); without, kubelet's resolv.conf for the cluster's DNS.
func clientPod(ns, name string, kind resolvers.Kind, nameserver string) string {
	dns := ""
	if nameserver != "" {
		dns = fmt.Sprintf(`
  dnsPolicy: "None"
  dnsConfig:
    nameservers: [%q]
    searches: [%s.svc.cluster.local, svc.cluster.local, cluster.local, corp.example]
    options: [{name: ndots, value: "5"}]`, nameserver, ns)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {app: nsguard-e2e-client}}
spec:
  terminationGracePeriodSeconds: 5
  securityContext: {runAsNonRoot: true, runAsUser: 65532}
  containers:
  - name: client
    image: %s
    imagePullPolicy: Never%s
`, name, ns, ClientImage(kind), dns)
}

// waitRunning waits until the Pod runs and has an address, and returns it.
func waitRunning(t *testing.T, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	for {
		p, err := env.node.CP.Clientset().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && (p.Status.PodIP != "" || p.Spec.HostNetwork) && podReady(p) {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s/%s not running after %s: %v\n%s", ns, name, timeout, err,
				must(t, "kubectl describe pod -n "+ns+" "+name+" | tail -20"))
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// lookup resolves name in a client Pod with kubectl exec, as its application would.
func lookup(t *testing.T, ns, pod, name string) resolvers.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.node.CP.KubectlPath(), "--kubeconfig="+env.node.CP.Kubeconfig,
		"exec", "-n", ns, pod, "--", "/lookup", name)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("kubectl exec %s/%s: %v", ns, pod, err)
	}
	res, err := resolvers.ParseOutput(stdout.String(), code)
	if err != nil {
		t.Fatalf("kubectl exec -n %s %s -- /lookup %s: %v\n%s", ns, pod, name, err, stderr.String())
	}
	return res
}

// show renders a result as the want maps do: sorted addresses, or failed.
func show(r resolvers.Result) string {
	if !r.OK() {
		return failed
	}
	return strings.Join(r.Addrs, " ")
}

const failed = "error"

var runningConfig = regexp.MustCompile(`Running configuration SHA512 = [0-9a-f]+`)

// configCounts counts, per running Pod of selector, the configurations its CoreDNS has run.
func configCounts(t *testing.T, selector string) map[string]int {
	t.Helper()
	pods, err := env.node.CP.Clientset().CoreV1().Pods("kube-system").List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		out, err := env.node.CP.Kubectl(t.Context(), "logs", "-n", "kube-system", p.Name)
		if err != nil {
			t.Fatal(err)
		}
		counts[p.Name] = len(runningConfig.FindAll(out, -1))
	}
	return counts
}

// waitReloaded waits until every Pod in before has run one more configuration: the reload
// plugin picked the ConfigMap's new Corefile up, once kubelet updated the volume.
func waitReloaded(t *testing.T, selector string, before map[string]int, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		now := configCounts(t, selector)
		done := len(before) > 0
		for p, n := range before {
			if now[p] <= n {
				done = false
			}
		}
		if done {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("CoreDNS Pods %v did not reload within %s (configurations run: before %v, now %v)", selector, timeout, before, now)
		}
		time.Sleep(2 * time.Second)
	}
}

// coreDNSLogs is what the runbook reads: every CoreDNS Pod's log, prefixed and timestamped.
func coreDNSLogs(t *testing.T) string {
	t.Helper()
	out, _ := sh(t, "kubectl logs -n kube-system -l k8s-app=kube-dns --prefix --timestamps --tail=-1")
	return out
}

func repoPath(rel string) string { return filepath.Join(env.root, rel) }

// relTo is the repository's rel from dir: kustomize takes no absolute path to a base.
func relTo(t *testing.T, dir, rel string) string {
	t.Helper()
	r, err := filepath.Rel(dir, repoPath(rel))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
