package nsguard

import (
	"slices"
	"sync"
	"sync/atomic"
)

// view is nsguard's read-only picture of the cluster: which namespaces and Services exist,
// which names the endpoints of each Service answer to, and which Pod owns an address.
// Informer handlers write it; the query path reads it under a read lock, without allocating.
type view struct {
	mu         sync.RWMutex
	namespaces map[string]struct{}
	services   map[string]*serviceObj    // "namespace/name"
	byName     map[string][]string       // Service name → namespaces that hold one, sorted
	slices     map[string]*sliceObj      // "namespace/slice"
	endpoints  map[string]map[string]int // "namespace/service" → endpoint name → how many slices name it
	pods       map[string]string         // IP → "namespace/name"
	podIPs     map[string][]string       // "namespace/name" → its IPs, to undo on update

	synced atomic.Bool // every informer has synced
	stale  atomic.Bool // a watch failed and nothing has arrived since
}

func newView() *view {
	return &view{
		namespaces: map[string]struct{}{},
		services:   map[string]*serviceObj{},
		byName:     map[string][]string{},
		slices:     map[string]*sliceObj{},
		endpoints:  map[string]map[string]int{},
		pods:       map[string]string{},
		podIPs:     map[string][]string{},
	}
}

// usable reports whether the view can be trusted now: synced, and not cut off from the API.
func (v *view) usable() bool { return v != nil && v.synced.Load() && !v.stale.Load() }

// Reads, for the query path. Keys must be lower case, as Kubernetes names are.

// pod returns "namespace/name" of the Pod with address ip, or "".
func (v *view) pod(ip []byte) string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.pods[string(ip)]
}

// hasService reports whether Service name exists in namespace ns.
func (v *view) hasService(key []byte) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	_, ok := v.services[string(key)]
	return ok
}

// hasEndpoint reports whether Service "namespace/service" has an endpoint called name.
func (v *view) hasEndpoint(service []byte, name []byte) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.endpoints[string(service)][string(name)] > 0
}

// namespacesWithService returns up to max namespaces holding a Service called name, and how
// many there are in all. It allocates: it is for log lines only.
func (v *view) namespacesWithService(name string, max int) ([]string, int) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	all := v.byName[name]
	return slices.Clone(all[:min(len(all), max)]), len(all)
}

// Writes, from the informers' handlers.

func (v *view) setNamespace(o *namespaceObj, present bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if present {
		v.namespaces[o.name] = struct{}{}
	} else {
		delete(v.namespaces, o.name)
	}
}

func (v *view) setService(o *serviceObj, present bool) {
	key := o.namespace + "/" + o.name
	v.mu.Lock()
	defer v.mu.Unlock()
	_, had := v.services[key]
	nss := v.byName[o.name]
	i, found := slices.BinarySearch(nss, o.namespace)
	switch {
	case present:
		v.services[key] = o
		if !found {
			v.byName[o.name] = slices.Insert(nss, i, o.namespace)
		}
	case had:
		delete(v.services, key)
		if found {
			nss = slices.Delete(nss, i, i+1)
		}
		if len(nss) == 0 {
			delete(v.byName, o.name)
		} else {
			v.byName[o.name] = nss
		}
	}
}

func (v *view) setSlice(o *sliceObj, present bool) {
	key := o.namespace + "/" + o.name
	v.mu.Lock()
	defer v.mu.Unlock()
	if old, ok := v.slices[key]; ok {
		v.countNames(old, -1)
		delete(v.slices, key)
	}
	if present && o.service != "" {
		v.slices[key] = o
		v.countNames(o, +1)
	}
}

// countNames adds d to the count of each endpoint name of slice o, under its Service.
func (v *view) countNames(o *sliceObj, d int) {
	svc := o.namespace + "/" + o.service
	names := v.endpoints[svc]
	if names == nil {
		names = map[string]int{}
		v.endpoints[svc] = names
	}
	for _, n := range o.names {
		if names[n] += d; names[n] <= 0 {
			delete(names, n)
		}
	}
	if len(names) == 0 {
		delete(v.endpoints, svc)
	}
}

func (v *view) setPod(o *podObj, present bool) {
	key := o.namespace + "/" + o.name
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, ip := range v.podIPs[key] {
		if v.pods[ip] == key {
			delete(v.pods, ip)
		}
	}
	delete(v.podIPs, key)
	if present && len(o.ips) > 0 {
		v.podIPs[key] = o.ips
		for _, ip := range o.ips {
			v.pods[ip] = key
		}
	}
}
