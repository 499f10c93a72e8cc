package nsguard

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
)

// view is nsguard's read-only picture of the cluster: which Services exist, which names
// the endpoints of each Service answer to, and which Pod owns an address. Informer
// handlers write it; the query path reads it under a read lock, without allocating.
type view struct {
	mu        sync.RWMutex
	services  map[objectKey]*serviceObj
	byName    map[string][]string          // Service name → namespaces that hold one, sorted
	slices    map[string]*sliceObj         // "namespace/slice"
	endpoints map[objectKey]map[string]int // Service → endpoint name → how many slices name it
	pods      map[netip.Addr]string        // address → "namespace/name", for an address only one live Pod holds
	shared    map[netip.Addr][]string      // address → the Pods, when more than one holds it
	livePods  map[string]*podObj           // "namespace/name" → the Pod with addresses: its IPs to undo on update, its UID for Events

	synced atomic.Bool // every informer has synced
	stale  atomic.Bool // a request to the API server failed and none has succeeded since

	servers []string // the server labels of its gauges
}

// objectKey names a namespaced object. The query path looks objects up by the labels of a
// question, so it keys by both parts rather than building "namespace/name".
type objectKey struct{ namespace, name string }

func newView() *view {
	return &view{
		services:  map[objectKey]*serviceObj{},
		byName:    map[string][]string{},
		slices:    map[string]*sliceObj{},
		endpoints: map[objectKey]map[string]int{},
		pods:      map[netip.Addr]string{},
		shared:    map[netip.Addr][]string{},
		livePods:  map[string]*podObj{},
	}
}

// setSynced records that every informer has synced.
func (v *view) setSynced() {
	v.synced.Store(true)
	for _, s := range v.servers {
		viewSynced.WithLabelValues(s).Set(1)
	}
}

// setStale records whether the view is cut off from the API server, and reports a change.
func (v *view) setStale(stale bool) bool {
	if v.stale.Swap(stale) == stale {
		return false
	}
	for _, s := range v.servers {
		viewStale.WithLabelValues(s).Set(map[bool]float64{false: 0, true: 1}[stale])
	}
	return true
}

// Reads, for the query path. Keys must be lower case, as Kubernetes names are.

// pod returns "namespace/name" of the only live Pod with address ip, or "".
func (v *view) pod(ip netip.Addr) string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.pods[ip]
}

// podUID returns the UID of Pod "namespace/name", when the view keeps UIDs.
func (v *view) podUID(key string) (string, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if p := v.livePods[key]; p != nil && p.uid != "" {
		return p.uid, true
	}
	return "", false
}

// homes returns the namespaces holding a Service called name, those that are not aliases
// into the cluster first (inZone tells), and how many of each kind there are. It allocates:
// it is for log lines only.
func (v *view) homes(name string, inZone func(target string) bool) (services, aliases []string) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, ns := range v.byName[name] {
		if s := v.services[objectKey{ns, name}]; s != nil && s.externalName != "" && inZone(s.externalName) {
			aliases = append(aliases, ns)
		} else {
			services = append(services, ns)
		}
	}
	return services, aliases
}

// Writes, from the informers' handlers.

func (v *view) setService(o *serviceObj, present bool) {
	key := objectKey{o.namespace, o.name}
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
	svc := objectKey{o.namespace, o.service}
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

// setPod records the addresses of a live Pod; the transform gives host-network and
// finished Pods none, since their addresses are not theirs alone.
func (v *view) setPod(o *podObj, present bool) {
	key := o.namespace + "/" + o.name
	v.mu.Lock()
	defer v.mu.Unlock()
	if old := v.livePods[key]; old != nil {
		for _, ip := range old.ips {
			v.release(ip, key)
		}
		delete(v.livePods, key)
	}
	if present && len(o.ips) > 0 {
		v.livePods[key] = o
		for _, ip := range o.ips {
			v.claim(ip, key)
		}
	}
}

// claim records that Pod key holds ip. A second holder makes the address nobody's.
func (v *view) claim(ip netip.Addr, key string) {
	if holders, ok := v.shared[ip]; ok {
		v.shared[ip] = append(holders, key)
		return
	}
	if other, ok := v.pods[ip]; ok && other != key {
		delete(v.pods, ip)
		v.shared[ip] = []string{other, key}
		return
	}
	v.pods[ip] = key
}

// release undoes claim; the last holder left gets the address back.
func (v *view) release(ip netip.Addr, key string) {
	holders, ok := v.shared[ip]
	if !ok {
		if v.pods[ip] == key {
			delete(v.pods, ip)
		}
		return
	}
	holders = slices.DeleteFunc(holders, func(h string) bool { return h == key })
	if len(holders) > 1 {
		v.shared[ip] = holders
		return
	}
	delete(v.shared, ip)
	if len(holders) == 1 {
		v.pods[ip] = holders[0]
	}
}
