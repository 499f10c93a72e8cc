package clusterview

import (
	"slices"
	"sync"
	"sync/atomic"
)

// owned holds what the view's own informers saw, where no kubernetes plugin runs beside
// nsguard: only the few fields the checks read (objects.go).
type owned struct {
	mu         sync.RWMutex
	services   map[objectKey]*serviceObj
	byName     map[string][]string          // Service name → namespaces that hold one, sorted
	slices     map[string]*sliceObj         // "namespace/slice"
	endpoints  map[objectKey]map[string]int // Service → endpoint name → how many slices name it
	namespaces map[string]struct{}

	synced  func() bool  // every informer's handler has seen every object
	changed atomic.Int64 // counts Service changes
}

// objectKey names a namespaced object. The query path looks objects up by the labels of a
// question, so it keys by both parts rather than building "namespace/name".
type objectKey struct{ namespace, name string }

func newOwned() *owned {
	return &owned{
		services:   map[objectKey]*serviceObj{},
		byName:     map[string][]string{},
		slices:     map[string]*sliceObj{},
		endpoints:  map[objectKey]map[string]int{},
		namespaces: map[string]struct{}{},
		synced:     func() bool { return false },
	}
}

func (o *owned) hasSynced() bool { return o.synced() }

func (o *owned) shadowed(ns, svc, ep string) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.endpoints[objectKey{ns, svc}][ep] == 0 {
		return false
	}
	_, ok := o.services[objectKey{svc, ep}]
	return ok
}

func (o *owned) each(name string, f func(namespace, externalName string)) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	for _, ns := range o.byName[name] {
		if s := o.services[objectKey{ns, name}]; s != nil {
			f(ns, s.externalName)
		}
	}
}

func (o *owned) modified() int64 { return o.changed.Load() }

func (o *owned) eachService(f func(namespace, name, externalName string, alias bool)) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	for k, s := range o.services {
		f(k.namespace, k.name, s.externalName, s.externalName != "") // the API requires a target of an ExternalName
	}
}

func (o *owned) hasNamespace(name string) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	_, ok := o.namespaces[name]
	return ok
}

// Writes, from the informers' handlers.

func (o *owned) setNamespace(n *namespaceObj, present bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if present {
		o.namespaces[n.name] = struct{}{}
	} else {
		delete(o.namespaces, n.name)
	}
}

func (o *owned) setService(s *serviceObj, present bool) {
	key := objectKey{s.namespace, s.name}
	o.mu.Lock()
	defer o.mu.Unlock()
	defer o.changed.Add(1)
	_, had := o.services[key]
	nss := o.byName[s.name]
	i, found := slices.BinarySearch(nss, s.namespace)
	switch {
	case present:
		o.services[key] = s
		if !found {
			o.byName[s.name] = slices.Insert(nss, i, s.namespace)
		}
	case had:
		delete(o.services, key)
		if found {
			nss = slices.Delete(nss, i, i+1)
		}
		if len(nss) == 0 {
			delete(o.byName, s.name)
		} else {
			o.byName[s.name] = nss
		}
	}
}

func (o *owned) setSlice(s *sliceObj, present bool) {
	key := s.namespace + "/" + s.name
	o.mu.Lock()
	defer o.mu.Unlock()
	if old, ok := o.slices[key]; ok {
		o.countNames(old, -1)
		delete(o.slices, key)
	}
	if present && s.service != "" {
		o.slices[key] = s
		o.countNames(s, +1)
	}
}

// countNames adds d to the count of each endpoint name of slice s, under its Service.
func (o *owned) countNames(s *sliceObj, d int) {
	svc := objectKey{s.namespace, s.service}
	names := o.endpoints[svc]
	if names == nil {
		names = map[string]int{}
		o.endpoints[svc] = names
	}
	for _, n := range s.names {
		if names[n] += d; names[n] <= 0 {
			delete(names, n)
		}
	}
	if len(names) == 0 {
		delete(o.endpoints, svc)
	}
}
