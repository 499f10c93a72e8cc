//go:build e2e

package node

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

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
	if err := env.node.Apply(t.Context(), yaml); err != nil {
		t.Fatalf("%v\n---\n%s", err, yaml)
	}
}

func clientPod(ns, name string, kind resolvers.Kind, nameserver string) string {
	return ClientPod(ns, name, kind, nameserver)
}

// waitRunning waits until the Pod runs and has an address, and returns it.
func waitRunning(t *testing.T, ns, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	p, err := env.node.WaitRunning(t.Context(), ns, name, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// lookup resolves name in a client Pod with kubectl exec, as its application would.
func lookup(t *testing.T, ns, pod, name string) resolvers.Result {
	t.Helper()
	r, err := env.node.Lookup(t.Context(), ns, pod, name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// show renders a result as the want maps do: sorted addresses, or failed.
func show(r resolvers.Result) string {
	if !r.OK() {
		return failed
	}
	return strings.Join(r.Addrs, " ")
}

const failed = "error"

// configCounts counts, per running Pod of selector, the configurations its CoreDNS has run.
func configCounts(t *testing.T, selector string) map[string]int {
	t.Helper()
	c, err := env.node.ConfigCounts(t.Context(), selector)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitReloaded waits until every Pod in before has run one more configuration.
func waitReloaded(t *testing.T, selector string, before map[string]int, timeout time.Duration) time.Duration {
	t.Helper()
	took, err := env.node.WaitReloaded(t.Context(), selector, before, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return took
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
