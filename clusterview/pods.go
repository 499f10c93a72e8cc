package clusterview

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// podStore is the reflector's store of Pods. It is not an informer: it keeps no copy of
// each object and no queue of changes, only which Pod holds each address, so that a
// cluster of 50,000 Pods of several kilobytes each costs a few megabytes.
type podStore struct {
	uids bool

	mu     sync.RWMutex
	byKey  map[string]*podObj     // "namespace/name" → the live Pod with addresses
	byAddr map[netip.Addr]*podObj // address → the only live Pod that holds it
	shared map[netip.Addr][]*podObj

	synced   atomic.Bool   // the first list has been stored
	syncedCh chan struct{} // closed then
}

func newPodStore(uids bool) *podStore {
	s := &podStore{uids: uids, syncedCh: make(chan struct{})}
	s.reset()
	return s
}

func (s *podStore) reset() {
	s.byKey = map[string]*podObj{}
	s.byAddr = map[netip.Addr]*podObj{}
	s.shared = map[netip.Addr][]*podObj{}
}

// Reads, for the query path.

func (s *podStore) pod(ip netip.Addr) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p := s.byAddr[ip]; p != nil {
		return p.key
	}
	return ""
}

func (s *podStore) uid(key string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p := s.byKey[key]; p != nil && p.uid != "" {
		return p.uid, true
	}
	return "", false
}

// The cache.ReflectorStore that the reflector writes.

// Transformer makes the reflector's own store, which holds a streamed list until it is
// complete, keep small objects too.
func (s *podStore) Transformer() cache.TransformFunc {
	return func(obj any) (any, error) { return s.small(obj), nil }
}

func (s *podStore) small(obj any) *podObj {
	switch o := obj.(type) {
	case *podWire:
		return o.small(s.uids)
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

// Replace takes a whole list, after a relist too: the Pods it does not name are gone. The
// new maps are built aside, so that queries wait only for the swap.
func (s *podStore) Replace(list []any, _ string) error {
	next := &podStore{uids: s.uids}
	next.reset()
	for _, o := range list {
		if p := s.small(o); p != nil {
			next.add(p)
		}
	}
	s.mu.Lock()
	s.byKey, s.byAddr, s.shared = next.byKey, next.byAddr, next.shared
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.byKey[p.key]; old != nil {
		for _, ip := range old.ips {
			s.release(ip, old)
		}
		delete(s.byKey, p.key)
	}
	if present {
		s.add(p)
	}
}

// add records a Pod the store does not hold: set forgot it first, and a list names each once.
func (s *podStore) add(p *podObj) {
	if len(p.ips) == 0 {
		return
	}
	s.byKey[p.key] = p
	for _, ip := range p.ips {
		s.claim(ip, p)
	}
}

// claim records that Pod p holds ip. A second holder makes the address nobody's.
func (s *podStore) claim(ip netip.Addr, p *podObj) {
	if holders, ok := s.shared[ip]; ok {
		s.shared[ip] = append(holders, p)
		return
	}
	if other, ok := s.byAddr[ip]; ok && other.key != p.key {
		delete(s.byAddr, ip)
		s.shared[ip] = []*podObj{other, p}
		return
	}
	s.byAddr[ip] = p
}

// release undoes claim; the last holder left gets the address back.
func (s *podStore) release(ip netip.Addr, p *podObj) {
	holders, ok := s.shared[ip]
	if !ok {
		if s.byAddr[ip] == p {
			delete(s.byAddr, ip)
		}
		return
	}
	holders = slices.DeleteFunc(holders, func(h *podObj) bool { return h == p })
	if len(holders) > 1 {
		s.shared[ip] = holders
		return
	}
	delete(s.shared, ip)
	if len(holders) == 1 {
		s.byAddr[ip] = holders[0]
	}
}
