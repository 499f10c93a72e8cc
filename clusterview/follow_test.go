package clusterview

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/internal/fixture"
)

// syncing is a kubernetes plugin's cache that syncs when the test says.
type syncing struct {
	*controller
	synced atomic.Bool
}

func (s *syncing) HasSynced() bool { return s.synced.Load() }

// TestFollowAcrossReload: a view handed over at a Corefile reload keeps its Pods and its
// synced state, reads the old plugin's caches until the new plugin's have synced, then the
// new ones; it lists no Pod again.
func TestFollowAcrossReload(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "client", UID: "u1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.9"}}
	cs := fake.NewClientset(append(fixture.Incident(), pod)...)
	old := newController(t, fixture.Incident()...)
	v := New(Config{Client: cs, Clients: true})
	r := v.Start(old)
	t.Cleanup(r.Stop)
	fixture.Eventually(t, v.Synced)
	lists := func() int {
		n := 0
		for _, a := range cs.Actions() {
			if a.Matches("list", "pods") {
				n++
			}
		}
		return n
	}
	before := lists()

	// The reload's plugin has not listed yet, and will not hold the shadow.
	next := &syncing{controller: newController(t)}
	if !v.Follow(next) {
		t.Fatal("the view does not follow the new plugin's caches")
	}
	shadow := clusterdns.Name{Shape: clusterdns.EndpointName, Namespace: "new-namespace-1", Service: "db", Endpoint: "primary"}
	client := netip.MustParseAddr("10.244.0.9")
	for range 5 {
		if !v.Synced() || v.Pod(client) != "kube-system/client" || !v.Shadowed(shadow) {
			t.Fatalf("until the new caches synced: synced %v, pod %q, shadowed %v; want the view as it was", v.Synced(), v.Pod(client), v.Shadowed(shadow))
		}
		time.Sleep(50 * time.Millisecond)
	}
	next.synced.Store(true)
	fixture.Eventually(t, func() bool { return !v.Shadowed(shadow) })
	if !v.Synced() || v.Pod(client) != "kube-system/client" {
		t.Errorf("after the new caches synced: synced %v, pod %q", v.Synced(), v.Pod(client))
	}
	if n := lists() - before; n != 0 {
		t.Errorf("the view listed Pods %d times across the reload", n)
	}

	// A view with informers of its own has nothing to follow.
	own := New(Config{Client: fake.NewClientset()})
	t.Cleanup(own.Start(nil).Stop)
	if own.Follow(next) {
		t.Error("a view of its own informers says it follows the kubernetes plugin")
	}
}
