//go:build e2e

package cluster_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsguard/nsguard/test/e2e/cluster"
)

// CoreDNS's token, checked against the serving CA as a pod's client-go checks it, may list
// what CoreDNS and nsguard watch and nothing more: it is the deploy manifests' RBAC, not admin.
func TestCoreDNSToken(t *testing.T) {
	ctx := t.Context()
	cp := cluster.StartT(t, buildTools(t))
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var token []byte
	for range 2 { // the second call finds the objects there and still mints a token
		if token, err = cluster.CoreDNSToken(ctx, cp.Clientset(), root); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := cp.ServingCA()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{
		Host: cp.Server, BearerToken: string(token), TLSClientConfig: rest.TLSClientConfig{CAData: ca},
	})
	if err != nil {
		t.Fatal(err)
	}
	list := metav1.ListOptions{Limit: 1}
	for what, call := range map[string]func() error{
		"namespaces":     func() error { _, err := cs.CoreV1().Namespaces().List(ctx, list); return err },
		"services":       func() error { _, err := cs.CoreV1().Services("").List(ctx, list); return err },
		"pods":           func() error { _, err := cs.CoreV1().Pods("").List(ctx, list); return err },
		"endpointslices": func() error { _, err := cs.DiscoveryV1().EndpointSlices("").List(ctx, list); return err },
	} {
		if err := call(); err != nil {
			t.Errorf("listing %s with CoreDNS's token: %v", what, err)
		}
	}
	if _, err := cs.CoreV1().Secrets("").List(ctx, list); !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets with CoreDNS's token: %v, want forbidden", err)
	}
}
