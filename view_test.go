package nsguard

import (
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsguard/nsguard/clusterview"
)

// startView runs a real cluster view, with its own informers, over a fake clientset of objs.
func startView(t testing.TB, clients bool, objs ...runtime.Object) (*forcedView, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	v := clusterview.New(clusterview.Config{Client: cs, Clients: clients, UIDs: true})
	r := v.Start(nil)
	t.Cleanup(r.Stop)
	if !v.Synced() {
		t.Fatal("view did not sync")
	}
	f := &forcedView{clusterView: v}
	f.synced.Store(true)
	return f, cs
}

// forcedView is a view whose synced and stale states a test sets; the rest reads through.
type forcedView struct {
	clusterView
	synced, stale atomic.Bool
}

func (f *forcedView) Synced() bool { return f.synced.Load() }
func (f *forcedView) Stale() bool  { return f.stale.Load() }

// emptyView is a view that holds nothing; synced unless a test says otherwise.
func emptyView(synced bool) *forcedView {
	f := &forcedView{clusterView: clusterview.New(clusterview.Config{})}
	f.synced.Store(synced)
	return f
}
