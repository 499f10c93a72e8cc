package clusterview

import (
	"slices"
	"sync"
	"time"

	"github.com/nsguard/nsguard/audit"
)

// Names is the view's index for the live findings: every Service's namespace, name and
// alias target, and which of the names the checks look for are namespaces. It implements
// audit.Names, so the plugin runs nsguard audit's own checks on it.
//
// Neither of the view's sources tells of a change: the kubernetes plugin's caches have no
// handlers for nsguard and only a clock of their last Service or endpoint change, and a
// Namespace bumps nothing. So Refresh compares: the Services, only when that clock says
// they may have changed, and the namespaces, by looking up each candidate name (every
// Service's name, and the reserved names). Nothing of it runs on the query path.
type Names struct {
	src services

	mu       sync.RWMutex
	services map[objectKey]*liveService
	byName   map[string][]string    // Service name → namespaces that hold one, sorted
	byNS     map[string][]string    // namespace → names of its Services, sorted
	into     map[string][]objectKey // alias target, as written → the aliases
	present  map[string]struct{}    // the candidate names that were namespaces at the last look

	gen      uint32
	scanned  bool
	modified int64 // the source's clock at the last scan
	scanSec  int64 // the second the last scan began
	reserved []string
	now      func() time.Time
}

type liveService struct {
	version, externalName string
	alias                 bool
	gen                   uint32
}

// Changes are what a Refresh found: the names whose checks may now find otherwise.
type Changes struct {
	Namespaces []string    // namespace checks to run again, sorted
	Services   []audit.Ref // Services added, changed or removed, as last seen
}

// Names returns the view's index for the live findings, empty until its first Refresh. It
// is nil before Start.
func (v *View) Names() *Names {
	if v.services == nil {
		return nil
	}
	return newNames(v.services)
}

func newNames(src services) *Names {
	return &Names{
		src:      src,
		services: map[objectKey]*liveService{},
		byName:   map[string][]string{},
		byNS:     map[string][]string{},
		into:     map[string][]objectKey{},
		present:  map[string]struct{}{},
		reserved: audit.ReservedNames(),
		now:      time.Now,
	}
}

// Refresh brings the index up to date and says what changed. It must not run before the
// view has synced, and from one goroutine at a time.
func (n *Names) Refresh() Changes {
	var ch Changes
	touched := map[string]struct{}{}
	if m := n.src.modified(); !n.scanned || m != n.modified || m >= n.scanSec {
		// The clock counts seconds: a change later in the second of the last scan leaves
		// it as it was, so a scan in that second is followed by one more.
		n.scanned, n.modified, n.scanSec = true, m, n.now().Unix()
		n.scan(&ch, touched)
	}
	n.look(touched)
	for name := range touched {
		ch.Namespaces = append(ch.Namespaces, name)
	}
	slices.Sort(ch.Namespaces)
	return ch
}

// scan compares every Service with the index; a Service not seen again was removed.
func (n *Names) scan(ch *Changes, touched map[string]struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.gen++
	changed := func(k objectKey, s *liveService) {
		ch.Services = append(ch.Services, audit.Ref{Namespace: k.namespace, Name: k.name, Alias: s.alias, ExternalName: s.externalName, Source: source})
		touched[k.name], touched[k.namespace] = struct{}{}, struct{}{}
	}
	n.src.eachService(func(ns, name, version, externalName string, alias bool) {
		k := objectKey{ns, name}
		s := n.services[k]
		switch {
		case s == nil:
			s = &liveService{}
			n.services[k] = s
			n.byName[name] = insertSorted(n.byName[name], ns)
			n.byNS[ns] = insertSorted(n.byNS[ns], name)
		case s.version == version:
			s.gen = n.gen // nearly every Service, nearly every time: a lookup, no write to the map
			return
		default:
			n.unlinkAlias(k, s)
		}
		*s = liveService{version: version, externalName: externalName, alias: alias, gen: n.gen}
		n.linkAlias(k, s)
		changed(k, s)
	})
	for k, s := range n.services {
		if s.gen == n.gen {
			continue
		}
		delete(n.services, k)
		n.unlinkAlias(k, s)
		deleteSorted(n.byName, k.name, k.namespace)
		deleteSorted(n.byNS, k.namespace, k.name)
		changed(k, s)
	}
}

// look finds which candidate names are namespaces now, and touches those that changed.
func (n *Names) look(touched map[string]struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	check := func(name string) {
		_, was := n.present[name]
		if is := n.src.hasNamespace(name); is != was {
			touched[name] = struct{}{}
			if is {
				n.present[name] = struct{}{}
			} else {
				delete(n.present, name)
			}
		}
	}
	for name := range n.byName {
		check(name)
	}
	for _, name := range n.reserved {
		if _, ok := n.byName[name]; !ok {
			check(name)
		}
	}
	for name := range n.present { // a name no Service has any more: it is no candidate now
		if _, ok := n.byName[name]; !ok && !slices.Contains(n.reserved, name) {
			delete(n.present, name)
		}
	}
}

func (n *Names) linkAlias(k objectKey, s *liveService) {
	if s.alias && s.externalName != "" {
		n.into[s.externalName] = append(n.into[s.externalName], k)
	}
}

func (n *Names) unlinkAlias(k objectKey, s *liveService) {
	if !s.alias || s.externalName == "" {
		return
	}
	if l := slices.DeleteFunc(n.into[s.externalName], func(x objectKey) bool { return x == k }); len(l) > 0 {
		n.into[s.externalName] = l
	} else {
		delete(n.into, s.externalName)
	}
}

// AliasesOf returns the ExternalName Services whose target is fqdn or fqdn without its
// trailing dot, as Services write it.
func (n *Names) AliasesOf(fqdn string) []audit.Ref {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var out []audit.Ref
	for _, t := range []string{fqdn, fqdn[:len(fqdn)-1]} {
		for _, k := range n.into[t] {
			out = append(out, n.ref(k))
		}
	}
	return out
}

// Len returns how many Services the index holds.
func (n *Names) Len() int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return len(n.services)
}

// source is where the live findings' objects were read.
const source = "live"

// The reads of audit.Names.

func (n *Names) Namespace(name string) (string, bool) {
	if n.src.hasNamespace(name) {
		return source, true
	}
	return "", false
}

func (n *Names) Service(ns, name string) (audit.Ref, bool) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if _, ok := n.services[objectKey{ns, name}]; !ok {
		return audit.Ref{}, false
	}
	return n.ref(objectKey{ns, name}), true
}

func (n *Names) ServicesNamed(name string) []audit.Ref {
	return n.refs(n.byName, name, func(ns string) objectKey { return objectKey{ns, name} })
}

func (n *Names) ServicesIn(ns string) []audit.Ref {
	return n.refs(n.byNS, ns, func(name string) objectKey { return objectKey{ns, name} })
}

// refs are the Services an index lists under key, in its order.
func (n *Names) refs(index map[string][]string, key string, service func(string) objectKey) []audit.Ref {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var out []audit.Ref
	for _, other := range index[key] {
		out = append(out, n.ref(service(other)))
	}
	return out
}

func (n *Names) ref(k objectKey) audit.Ref {
	s := n.services[k]
	return audit.Ref{Namespace: k.namespace, Name: k.name, Alias: s.alias, ExternalName: s.externalName, Source: source}
}

func insertSorted(l []string, s string) []string {
	if i, found := slices.BinarySearch(l, s); !found {
		return slices.Insert(l, i, s)
	}
	return l
}

// deleteSorted removes s from m[key]; the key goes when nothing is left.
func deleteSorted(m map[string][]string, key, s string) {
	l := m[key]
	if i, found := slices.BinarySearch(l, s); found {
		l = slices.Delete(l, i, i+1)
	}
	if len(l) == 0 {
		delete(m, key)
	} else {
		m[key] = l
	}
}
