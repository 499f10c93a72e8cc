package clusterview

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/nsguard/nsguard/clusterview/leanpod"
)

// podStore is the reflector's store of Pods. It is not an informer: it keeps no copy of
// each object and no queue of changes, only which Pod holds each address, so that a
// cluster of 50,000 Pods of several kilobytes each costs a few megabytes. Its maps hold
// values, not pointers to a record per Pod: every byte held is paid about twice at
// CoreDNS's peak, where the garbage collector lets the heap grow to twice what is live.
type podStore struct {
	uids bool

	mu     sync.RWMutex
	byKey  map[string]podAddrs // "namespace/name" → the addresses of the live Pod
	byAddr map[addr16]string   // address → the key of the only live Pod that holds it
	shared map[addr16][]string // address → the keys of the live Pods that hold it, when more than one
	uidOf  map[string]string   // key → UID of each Pod in byKey; nil unless Events name Pods

	synced   atomic.Bool   // the first list has been stored
	syncedCh chan struct{} // closed then
}

// addr16 is an address as a map key: an IPv4 address and its IPv4-mapped form are one.
type addr16 = [16]byte

// podAddrs are a Pod's own addresses, unset ones zero (no Pod has the address ::). The API
// gives a Pod at most one of each family.
type podAddrs [2]addr16

func newPodStore(uids bool) *podStore {
	s := &podStore{uids: uids, syncedCh: make(chan struct{})}
	s.byKey, s.byAddr, s.shared = map[string]podAddrs{}, map[addr16]string{}, map[addr16][]string{}
	if uids {
		s.uidOf = map[string]string{}
	}
	return s
}

// Reads, for the query path.

func (s *podStore) pod(ip netip.Addr) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byAddr[ip.As16()]
}

func (s *podStore) uid(key string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u := s.uidOf[key]
	return u, u != ""
}

// The cache.ReflectorStore that the reflector writes.

// Transformer makes the reflector's own store, which holds a streamed list until it is
// complete, keep small objects too.
func (s *podStore) Transformer() cache.TransformFunc {
	return func(obj any) (any, error) { return s.small(obj), nil }
}

func (s *podStore) small(obj any) *podObj {
	switch o := obj.(type) {
	case *leanpod.Pod:
		return smallPod(o, s.uids)
	case *corev1.Pod:
		return toPod(o, s.uids)
	case *podObj:
		return o
	case cache.DeletedFinalStateUnknown:
		return s.small(o.Obj)
	}
	return nil
}

func (s *podStore) Add(obj any) error    { s.set(s.small(obj), true); return nil }
func (s *podStore) Update(obj any) error { s.set(s.small(obj), true); return nil }
func (s *podStore) Delete(obj any) error { s.set(s.small(obj), false); return nil }
func (s *podStore) Resync() error        { return nil }

// Replace takes a whole list, after a relist too: the Pods it does not name are gone. It
// writes in place, Pod by Pod, so that a relist holds no second copy of the store: a Pod
// whose addresses did not change costs a lookup and no write. Queries between two Pods
// see each one either as it was or as it is.
func (s *podStore) Replace(list []any, _ string) error {
	listed := make([]string, 0, len(list))
	for _, o := range list {
		if p := s.small(o); p != nil {
			listed = append(listed, p.key)
			s.set(p, true)
		}
	}
	slices.Sort(listed)
	s.mu.Lock()
	for key, addrs := range s.byKey {
		if _, ok := slices.BinarySearch(listed, key); !ok {
			s.forget(key, addrs)
		}
	}
	s.mu.Unlock()
	if !s.synced.Swap(true) {
		close(s.syncedCh)
	}
	return nil
}

// set records the addresses of a live Pod, or forgets them.
func (s *podStore) set(p *podObj, present bool) {
	if p == nil {
		return
	}
	var next podAddrs
	if present {
		next = p.addrs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.byKey[p.key]
	if had && old == next && (!s.uids || s.uidOf[p.key] == p.uid) {
		return // the same Pod, as a relist or a status update hands it over again
	}
	if had {
		s.forget(p.key, old)
	}
	if next == (podAddrs{}) {
		return
	}
	s.byKey[p.key] = next
	if s.uids {
		s.uidOf[p.key] = p.uid
	}
	for _, ip := range next {
		if ip != (addr16{}) {
			s.claim(ip, p.key)
		}
	}
}

// forget drops Pod key, which holds addrs.
func (s *podStore) forget(key string, addrs podAddrs) {
	for _, ip := range addrs {
		if ip != (addr16{}) {
			s.release(ip, key)
		}
	}
	delete(s.byKey, key)
	delete(s.uidOf, key)
}

// claim records that Pod key holds ip. A second holder makes the address nobody's.
func (s *podStore) claim(ip addr16, key string) {
	if holders, ok := s.shared[ip]; ok {
		s.shared[ip] = append(holders, key)
		return
	}
	if other, ok := s.byAddr[ip]; ok && other != key {
		delete(s.byAddr, ip)
		s.shared[ip] = []string{other, key}
		return
	}
	s.byAddr[ip] = key
}

// release undoes claim; the last holder left gets the address back.
func (s *podStore) release(ip addr16, key string) {
	holders, ok := s.shared[ip]
	if !ok {
		if s.byAddr[ip] == key {
			delete(s.byAddr, ip)
		}
		return
	}
	holders = slices.DeleteFunc(holders, func(h string) bool { return h == key })
	if len(holders) > 1 {
		s.shared[ip] = holders
		return
	}
	delete(s.shared, ip)
	if len(holders) == 1 {
		s.byAddr[ip] = holders[0]
	}
}
