package clusterview

import (
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/coredns/coredns/plugin/kubernetes"
	corev1 "k8s.io/api/core/v1"
)

// shared reads the kubernetes plugin's caches: CoreDNS watches Services, EndpointSlices
// and Namespaces once, for both plugins. Its objects are shared and read-only.
type shared struct{ c Controller }

func (s shared) hasSynced() bool { return s.c.HasSynced() }

func (s shared) shadowed(ns, svc, ep string) bool {
	// Service ep in namespace svc is the rare part, so it is looked up first.
	if !s.any(func(k string) bool { return len(s.c.SvcIndex(k)) > 0 }, ep, svc) {
		return false
	}
	return s.any(func(k string) bool {
		for _, e := range s.c.EpIndex(k) {
			for _, sub := range e.Subsets {
				for _, a := range sub.Addresses {
					// The names the kubernetes plugin answers for an address: its hostname, or
					// without one its Pod's name (endpoint_pod_names).
					if a.Hostname == ep || a.Hostname == "" && strings.EqualFold(a.TargetRefName, ep) {
						return true
					}
				}
			}
		}
		return false
	}, svc, ns)
}

// keys holds the buffers of index keys, so that a lookup that finds nothing, as nearly
// every search candidate does, allocates nothing.
var keys = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

// any calls f with the index key "name.namespace" of the kubernetes plugin. The key lives
// in a pooled buffer: the caches only look it up, they never keep it.
func (shared) any(f func(key string) bool, name, namespace string) bool {
	bp := keys.Get().(*[]byte)
	b := append(append(append((*bp)[:0], name...), '.'), namespace...)
	ok := f(unsafe.String(unsafe.SliceData(b), len(b)))
	*bp = b
	keys.Put(bp)
	return ok
}

func (s shared) each(name string, f func(namespace, externalName string)) {
	for _, svc := range s.c.ServiceList() {
		if svc.Name == name {
			f(svc.Namespace, svc.ExternalName)
		}
	}
}

func (s shared) hasNamespace(name string) bool {
	_, err := s.c.GetNamespaceByName(name)
	return err == nil
}

// modified is the kubernetes plugin's clock of its last Service or endpoint change that DNS
// sees, in seconds. Its Namespaces move no clock.
func (s shared) modified() int64 { return s.c.Modified(kubernetes.ModifiedInternal) }

func (s shared) eachService(f func(namespace, name, externalName string, alias bool)) {
	for _, svc := range s.c.ServiceList() {
		alias := svc.Type == corev1.ServiceTypeExternalName
		target := ""
		if alias {
			target = svc.ExternalName
		}
		f(svc.Namespace, svc.Name, target, alias)
	}
}

// pluginCaches are the kubernetes plugin's caches across Corefile reloads: a reload starts a
// new plugin, whose caches list everything again, and the view reads the last caches that
// synced until the new ones have (View.Follow).
type pluginCaches struct {
	cur atomic.Pointer[shared]
	mu  sync.Mutex
	gen uint64 // of the caches asked for last
}

func newPluginCaches(c Controller) *pluginCaches {
	p := &pluginCaches{}
	p.cur.Store(&shared{c})
	return p
}

// want records that c is to be read once synced, and returns its turn.
func (p *pluginCaches) want(Controller) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	return p.gen
}

// use reads c from now on, unless caches were asked for after it.
func (p *pluginCaches) use(gen uint64, c Controller) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if gen == p.gen {
		p.cur.Store(&shared{c})
	}
}

func (p *pluginCaches) hasSynced() bool                  { return p.cur.Load().hasSynced() }
func (p *pluginCaches) shadowed(ns, svc, ep string) bool { return p.cur.Load().shadowed(ns, svc, ep) }
func (p *pluginCaches) each(name string, f func(namespace, externalName string)) {
	p.cur.Load().each(name, f)
}
func (p *pluginCaches) hasNamespace(name string) bool { return p.cur.Load().hasNamespace(name) }
func (p *pluginCaches) modified() int64               { return p.cur.Load().modified() }
func (p *pluginCaches) eachService(f func(namespace, name, externalName string, alias bool)) {
	p.cur.Load().eachService(f)
}
