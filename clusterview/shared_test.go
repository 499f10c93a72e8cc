package clusterview

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/coredns/coredns/plugin/kubernetes/object"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/internal/fixture"
)

// controller is the kubernetes plugin's cache as the view reads it, built with the plugin's
// own transforms and index keys from API objects.
type controller struct {
	services   cache.Indexer
	endpoints  cache.Indexer
	namespaces map[string]*object.Namespace
	modified   atomic.Int64 // bumped by the tests, as the plugin's handlers do
}

func newController(t testing.TB, objs ...runtime.Object) *controller {
	t.Helper()
	byIndex := func(obj any) ([]string, error) {
		switch o := obj.(type) {
		case *object.Service:
			return []string{o.Index}, nil
		case *object.Endpoints:
			return []string{o.Index}, nil
		}
		return nil, errors.New("unexpected object")
	}
	c := &controller{
		services:   cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"index": byIndex}),
		endpoints:  cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{"index": byIndex}),
		namespaces: map[string]*object.Namespace{},
	}
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Service:
			var s any
			if s, err = object.ToService(o); err == nil {
				err = c.services.Add(s)
			}
		case *discovery.EndpointSlice:
			var e any
			if e, err = object.EndpointSliceToEndpoints(o); err == nil {
				err = c.endpoints.Add(e)
			}
		case *corev1.Namespace:
			var n any
			if n, err = object.ToNamespace(o); err == nil {
				c.namespaces[n.(*object.Namespace).Name] = n.(*object.Namespace) // ToNamespace empties o
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *controller) ServiceList() (list []*object.Service) {
	for _, o := range c.services.List() {
		list = append(list, o.(*object.Service))
	}
	return list
}

func (c *controller) SvcIndex(k string) (list []*object.Service) {
	os, _ := c.services.ByIndex("index", k)
	for _, o := range os {
		list = append(list, o.(*object.Service))
	}
	return list
}

func (c *controller) EpIndex(k string) (list []*object.Endpoints) {
	os, _ := c.endpoints.ByIndex("index", k)
	for _, o := range os {
		list = append(list, o.(*object.Endpoints))
	}
	return list
}

func (c *controller) GetNamespaceByName(name string) (*object.Namespace, error) {
	if n := c.namespaces[name]; n != nil {
		return n, nil
	}
	return nil, errors.New("namespace not found")
}

func (c *controller) HasSynced() bool { return true }

func (c *controller) Modified(kubernetes.ModifiedMode) int64 { return c.modified.Load() }

// TestSharedMatchesOwned reads the same cluster through the kubernetes plugin's caches and
// through the view's own informers, and gets the same answers.
func TestSharedMatchesOwned(t *testing.T) {
	own, _ := startView(t, nil, true, fixture.Incident()...)
	shared, _ := startView(t, newController(t, fixture.Incident()...), true, fixture.Incident()...)
	names := []struct {
		ns, svc, ep string
		want        bool
	}{
		{"new-namespace-1", "db", "primary", true},
		{"new-namespace-1", "DB", "Primary", true},  // mixed case, as some forwarders send
		{"new-namespace-1", "db", "replica", false}, // no Service replica in namespace db
		{"new-namespace-1", "db", "db-pod-primary", false},
		{"shop", "nginx", "web-0", false},
		{"com", "github", "api", false},
		{"new-namespace-2", "my-app", "x", false},
	}
	for _, n := range names {
		name := clusterdns.Name{Shape: clusterdns.EndpointName, Namespace: n.ns, Service: n.svc, Endpoint: n.ep}
		for _, v := range []*View{own, shared} {
			if got := v.Shadowed(name); got != n.want {
				t.Errorf("%T: Shadowed(%s.%s.%s) = %v, want %v", v.services, n.ep, n.svc, n.ns, got, n.want)
			}
		}
	}
	for _, name := range []string{"my-app", "other-app-1", "primary", "none"} {
		s1, a1 := own.Homes(name, inClusterLocal)
		s2, a2 := shared.Homes(name, inClusterLocal)
		if !slices.Equal(s1, s2) || !slices.Equal(a1, a2) {
			t.Errorf("Homes(%s): own %v %v, shared %v %v", name, s1, a1, s2, a2)
		}
	}
	for _, ns := range []string{"my-app", "db", "legacy-not-there"} {
		if own.HasNamespace(ns) != shared.HasNamespace(ns) {
			t.Errorf("HasNamespace(%s): own %v, shared %v", ns, own.HasNamespace(ns), shared.HasNamespace(ns))
		}
	}
	if got := shared.Pod(netip.MustParseAddr("10.244.1.5")); got != "new-namespace-1/client" {
		t.Errorf("shared: Pod(10.244.1.5) = %q", got)
	}
}

// TestShadowedDoesNotAllocate holds the pass-through promise for both sources: a search
// candidate shaped like an endpoint name that shadows nothing, as nearly all are, costs no
// allocation. A shadow found may allocate: its answer is held anyway.
func TestShadowedDoesNotAllocate(t *testing.T) {
	own, _ := startView(t, nil, false, fixture.Incident()...)
	shared, _ := startView(t, newController(t, fixture.Incident()...), false, fixture.Incident()...)
	for _, v := range []*View{own, shared} {
		for _, n := range []clusterdns.Name{
			{Namespace: "com", Service: "github", Endpoint: "api"},
			{Namespace: "new-namespace-1", Service: "db", Endpoint: "replica"},
		} {
			if a := testing.AllocsPerRun(100, func() { v.Shadowed(n) }); a != 0 {
				t.Errorf("%T: Shadowed(%s) allocates %v times", v.services, strings.Join([]string{n.Endpoint, n.Service, n.Namespace}, "."), a)
			}
		}
	}
}

type unsynced struct{ *controller }

func (unsynced) HasSynced() bool { return false }

// TestStartDoesNotWaitForTheKubernetesPlugin: the kubernetes plugin starts its caches after
// nsguard's start-up, so waiting on them would delay every start and reload by SyncWait.
func TestStartDoesNotWaitForTheKubernetesPlugin(t *testing.T) {
	for _, clients := range []bool{false, true} {
		v := New(Config{Client: fake.NewClientset(fixture.Incident()...), Clients: clients})
		began := time.Now()
		r := v.Start(unsynced{newController(t, fixture.Incident()...)})
		took := time.Since(began)
		r.Stop()
		if took > SyncWait/2 {
			t.Errorf("clients %v: Start took %v waiting on caches that were not its own", clients, took)
		}
		if v.Synced() {
			t.Errorf("clients %v: synced before the kubernetes plugin's caches", clients)
		}
	}
}

// syncLater is a kubernetes plugin whose caches sync when told.
type syncLater struct {
	*controller
	synced atomic.Bool
}

func (c *syncLater) HasSynced() bool { return c.synced.Load() }

// TestPodsBeforeTheKubernetesPlugin: Start returns once nsguard's Pods have synced, before the
// kubernetes plugin starts its caches, so the two initial lists never decode at once; a Pod
// list the API server refuses ends that wait at once.
func TestPodsBeforeTheKubernetesPlugin(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		cs := fake.NewClientset(fixture.Incident()...)
		if refuse {
			forbidden := apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("RBAC"))
			cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, forbidden })
			cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, nil, forbidden })
		}
		ctl := &syncLater{controller: newController(t, fixture.Incident()...)}
		v := New(Config{Client: cs, Clients: true})
		began := time.Now()
		r := v.Start(ctl)
		took := time.Since(began)
		if took > SyncWait/2 {
			t.Errorf("refuse %v: Start took %v", refuse, took)
		}
		if got := v.pods.synced.Load(); got == refuse {
			t.Errorf("refuse %v: Pods synced %v when Start returned", refuse, got)
		}
		if v.Synced() {
			t.Errorf("refuse %v: synced before the kubernetes plugin's caches", refuse)
		}
		if !refuse {
			ctl.synced.Store(true)
			fixture.Eventually(t, v.Synced)
			if pod := v.Pod(netip.MustParseAddr("10.244.1.5")); pod != "new-namespace-1/client" {
				t.Errorf("Pod(10.244.1.5) = %q after sync, want new-namespace-1/client", pod)
			}
		}
		r.Stop()
	}
}

// BenchmarkShadowed compares the shadow check of the two sources on the name most
// endpoint-shaped questions are: a search candidate that shadows nothing.
func BenchmarkShadowed(b *testing.B) {
	own := &View{services: newOwned()}
	o := own.services.(*owned)
	for _, obj := range fixture.Incident() {
		switch s, _ := toSmall(obj); s := s.(type) {
		case *serviceObj:
			o.setService(s, true)
		case *sliceObj:
			o.setSlice(s, true)
		}
	}
	b.Run("source=owned", func(b *testing.B) { benchShadowed(b, own) })
	shared := &View{services: shared{newController(b, fixture.Incident()...)}}
	b.Run("source=shared", func(b *testing.B) { benchShadowed(b, shared) })
}

func benchShadowed(b *testing.B, v *View) {
	miss := clusterdns.Name{Namespace: "com", Service: "github", Endpoint: "api"}
	hit := clusterdns.Name{Namespace: "new-namespace-1", Service: "db", Endpoint: "primary"}
	if v.Shadowed(miss) || !v.Shadowed(hit) {
		b.Fatal("view does not hold the incident")
	}
	b.Run("name=miss", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v.Shadowed(miss)
		}
	})
	b.Run("name=hit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v.Shadowed(hit)
		}
	})
}
