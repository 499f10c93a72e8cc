package nsguard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestContact marks the view stale when the API server cannot be reached, and fresh again
// when it answers.
func TestContact(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	v := newView()
	c := &contact{next: http.DefaultTransport, view: v}
	get := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if res, err := c.RoundTrip(req); err == nil {
			res.Body.Close()
		}
	}
	get()
	if v.stale.Load() {
		t.Fatal("stale while the server answers")
	}
	srv.Close()
	start := time.Now()
	get() // a read is retried until the caller gives up
	if !v.stale.Load() {
		t.Fatal("not stale after a refused request")
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("a refused read returned after %v; want it retried until the caller's deadline", waited)
	}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	get()
	if v.stale.Load() {
		t.Fatal("still stale after the server answered again")
	}
}

// TestKubernetesClient builds no client outside a cluster without kubeconfig or endpoint,
// and one with an endpoint.
func TestKubernetesClient(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if c, err := (config{}).kubernetesClient(newView()); c != nil || err != nil {
		t.Errorf("outside a cluster: got %v, %v; want no client and no error", c, err)
	}
	if c, err := (config{endpoint: "http://127.0.0.1:1"}).kubernetesClient(newView()); c == nil || err != nil {
		t.Errorf("with an endpoint: got %v, %v; want a client", c, err)
	}
}
