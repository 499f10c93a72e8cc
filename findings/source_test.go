package findings

import (
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/coredns/coredns/plugin/kubernetes/object"

	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsguard/nsguard/clusterview"
)

// pluginCache is the kubernetes plugin's cache as the live findings read it through the
// cluster view: its Service list, its clock of Service changes and its Namespace lookups,
// which fail with a new error for a name that is no namespace, as the plugin's do.
// It takes no lock: the benchmarks change it between looks, from the goroutine that looks.
type pluginCache struct {
	services   []*object.Service
	namespaces map[string]*object.Namespace
	modified   atomic.Int64
}

func newPluginCache(objs ...k8sruntime.Object) *pluginCache {
	p := &pluginCache{namespaces: map[string]*object.Namespace{}}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Namespace:
			p.namespaces[o.Name] = &object.Namespace{Name: o.Name}
		case *corev1.Service:
			s := &object.Service{Namespace: o.Namespace, Name: o.Name, Version: "1", Type: o.Spec.Type, ExternalName: o.Spec.ExternalName}
			p.services = append(p.services, s)
		}
	}
	return p
}

func (p *pluginCache) ServiceList() []*object.Service {
	return append([]*object.Service(nil), p.services...)
}
func (p *pluginCache) SvcIndex(string) []*object.Service      { return nil }
func (p *pluginCache) EpIndex(string) []*object.Endpoints     { return nil }
func (p *pluginCache) HasSynced() bool                        { return true }
func (p *pluginCache) Modified(kubernetes.ModifiedMode) int64 { return p.modified.Load() }
func (p *pluginCache) GetNamespaceByName(name string) (*object.Namespace, error) {
	if n := p.namespaces[name]; n != nil {
		return n, nil
	}
	return nil, errors.New("namespace not found")
}

// viewOf is a started cluster view that reads p as the kubernetes plugin's caches.
func viewOf(tb testing.TB, p *pluginCache) *clusterview.View {
	v := clusterview.New(clusterview.Config{Client: fake.NewClientset()})
	run := v.Start(p)
	tb.Cleanup(run.Stop)
	for !v.Synced() {
		runtime.Gosched()
	}
	return v
}

// fullSize is the cluster: 5,000 namespaces of 4 Services each, every Service name
// its own (so 20,000 candidates to look up), one in 20 an ExternalName alias to a Service of
// the next namespace, and one capture: namespace ns1 and a Service ns1 in ns0.
func fullSize() *pluginCache {
	p := &pluginCache{namespaces: map[string]*object.Namespace{}}
	for j := range 5000 {
		ns := "ns" + strconv.Itoa(j)
		p.namespaces[ns] = &object.Namespace{Name: ns}
		for i := range 4 {
			k := 4*j + i
			s := &object.Service{Namespace: ns, Name: "svc" + strconv.Itoa(k), Version: "1", Type: corev1.ServiceTypeClusterIP}
			if k%20 == 1 {
				s.Type, s.ExternalName = corev1.ServiceTypeExternalName, "svc"+strconv.Itoa(k+4)+".ns"+strconv.Itoa(j+1)+".svc.cluster.local"
			}
			p.services = append(p.services, s)
		}
	}
	p.services = append(p.services, &object.Service{Namespace: "ns0", Name: "ns1", Version: "1", Type: corev1.ServiceTypeClusterIP})
	return p
}

// fakeSource is a cluster view that tests change while the live findings look at it. It
// counts its Namespace lookups.
type fakeSource struct {
	mu         sync.Mutex
	services   map[objectKey]string // → the target of an ExternalName Service, "" for others
	namespaces map[string]bool
	modified   int64
	looks      int
}

func newFakeSource(objs ...k8sruntime.Object) *fakeSource {
	f := &fakeSource{services: map[objectKey]string{}, namespaces: map[string]bool{}}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Namespace:
			f.namespaces[o.Name] = true
		case *corev1.Service:
			f.services[objectKey{o.Namespace, o.Name}] = o.Spec.ExternalName
		}
	}
	return f
}

func (f *fakeSource) Synced() bool { return true }

func (f *fakeSource) EachService(fn func(namespace, name, externalName string, alias bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, t := range f.services {
		fn(k.namespace, k.name, t, t != "")
	}
}

func (f *fakeSource) HasNamespace(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looks++
	return f.namespaces[name]
}

func (f *fakeSource) ServicesModified() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.modified
}

// setService adds, changes or (present false) deletes a Service, and moves the clock.
func (f *fakeSource) setService(ns, name, target string, present bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if present {
		f.services[objectKey{ns, name}] = target
	} else {
		delete(f.services, objectKey{ns, name})
	}
	f.modified++
}

func (f *fakeSource) setNamespace(name string, present bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.namespaces[name] = present
}

func (f *fakeSource) lookups() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.looks
}
