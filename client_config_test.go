package nsguard

import (
	"testing"
)

// TestKubernetesClient builds no client outside a cluster without kubeconfig or endpoint,
// and one with an endpoint.
func TestKubernetesClient(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if c, err := (config{}).kubernetesClient(); c != nil || err != nil {
		t.Errorf("outside a cluster: got %v, %v; want no client and no error", c, err)
	}
	if c, err := (config{endpoint: "http://127.0.0.1:1"}).kubernetesClient(); c == nil || err != nil {
		t.Errorf("with an endpoint: got %v, %v; want a client", c, err)
	}
}
