package findings

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nsguard/nsguard/audit"
)

// Names is the live findings' index of the cluster view: every Service's namespace and
// name, the ExternalName Services' targets, and which of the names the checks look for are
// namespaces. It implements audit.Names, so the plugin runs nsguard audit's own checks on it.
//
// It is two sorted slices, not maps of objects: at 20,000 Services it holds well under a
// megabyte beside the kubernetes plugin's caches, and every byte of it is paid twice at
// CoreDNS's peak, since the garbage collector lets the heap grow to twice what is live.
// The names are the source's own strings, not copies.
//
// Neither of the view's sources tells of a change: the kubernetes plugin's caches have no
// handlers for nsguard and only a clock of their last Service or endpoint change, and a
// Namespace bumps nothing. So Refresh compares: the Services, only when that clock says
// they may have changed, and the namespaces, by looking up the candidate names (every
// Service's name, every namespace that holds an ExternalName Service, and the reserved
// names), LookPerRefresh of them at a time. Nothing of it runs on the query path.
type Names struct {
	src Source

	mu      sync.RWMutex
	byName  []serviceName          // every Service, by name then namespace
	byNS    []int32                // positions in byName, by namespace then name
	targets map[objectKey]string   // ExternalName Service → its target, as written
	into    map[string][]objectKey // alias target → the aliases
	present map[string]struct{}    // the Service names and reserved names that were namespaces at the last look
	aliasNS []string               // the namespaces that hold an ExternalName Service, sorted
	// aliasPresent are the namespaces of aliasNS, and no Service's name, that were
	// namespaces when the look last came round to them.
	aliasPresent map[string]struct{}

	seen     []uint64 // scratch of scan: which of byName the source still has
	next     int      // where in the candidates (byName, then aliasNS) the next look goes on
	perLook  int      // names a look goes round, at most (LookPerRefresh)
	scanned  bool
	modified int64 // the source's clock at the last scan
	scanSec  int64 // the second the last scan began
	reserved []string
	now      func() time.Time
}

type serviceName struct{ name, namespace string }

func (a serviceName) compare(b serviceName) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	return strings.Compare(a.namespace, b.namespace)
}

// Changes are what a Refresh found: the names whose checks may now find otherwise.
type Changes struct {
	Namespaces []string    // namespace checks to run again, sorted
	Services   []audit.Ref // Services added, removed, or whose target changed, as last seen
}

// Source is what the live findings read of the cluster view: its Services and Namespaces,
// as clusterview.View gives them. Names are lower case.
type Source interface {
	Synced() bool
	// EachService calls f with every Service; alias is an ExternalName Service.
	EachService(f func(namespace, name, externalName string, alias bool))
	HasNamespace(name string) bool
	// ServicesModified changes when a Service may have changed; it counts seconds.
	ServicesModified() int64
}

// objectKey names a namespaced object.
type objectKey struct{ namespace, name string }

// NewNames returns an index of src, empty until its first Refresh.
func NewNames(src Source) *Names {
	return &Names{
		src:     src,
		targets: map[objectKey]string{},
		into:    map[string][]objectKey{},
		present: map[string]struct{}{},

		aliasPresent: map[string]struct{}{},
		reserved:     audit.ReservedNames(),
		perLook:      LookPerRefresh,
		now:          time.Now,
	}
}

// Refresh brings the index up to date and says what changed. It must not run before the
// view has synced, and from one goroutine at a time.
func (n *Names) Refresh() Changes {
	var ch Changes
	touched := map[string]struct{}{}
	if m := n.src.ServicesModified(); !n.scanned || m != n.modified || m >= n.scanSec {
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

// scan compares every Service with the index. A Service's version is not compared: the
// checks read only its name, namespace and target, and most updates change none of them.
// The index is built again only when a Service came or went, so a scan that finds the
// same Services allocates nothing.
func (n *Names) scan(ch *Changes, touched map[string]struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	changed := func(k objectKey, r audit.Ref) {
		ch.Services = append(ch.Services, r)
		touched[k.name], touched[k.namespace] = struct{}{}, struct{}{}
	}
	n.seen = slices.Grow(n.seen[:0], (len(n.byName)+63)/64)[:(len(n.byName)+63)/64]
	clear(n.seen)
	var added []serviceName
	var targets map[objectKey]string // made at the first alias: most clusters have few or none
	count := 0
	n.src.EachService(func(ns, name, target string, alias bool) {
		count++
		k := objectKey{ns, name}
		if alias {
			if targets == nil {
				targets = map[objectKey]string{}
			}
			targets[k] = target
		}
		if i, found := n.find(k); found {
			n.seen[i/64] |= 1 << (i % 64)
		} else {
			added = append(added, serviceName{name, ns})
		}
	})
	// Targets first, while the old ones are known: a Service that came or went is told
	// below, one that stayed is told here if its target changed or it became an alias or
	// stopped being one.
	aliases := false // an alias came, went or changed its target
	for k, t := range n.targets {
		if nt, still := targets[k]; !still || nt != t {
			aliases = true
			n.unlinkAlias(k, t)
			if i, ok := n.find(k); still || ok && n.seen[i/64]&(1<<(i%64)) != 0 {
				changed(k, refOf(k, targets))
			}
		}
	}
	for k, t := range targets {
		if old, had := n.targets[k]; !had || old != t {
			aliases = true
			n.linkAlias(k, t)
			if _, ok := n.find(k); ok && !had {
				changed(k, refOf(k, targets))
			}
		}
	}
	old := n.targets
	n.targets = targets
	if aliases {
		n.aliasNS = n.aliasNS[:0]
		for k := range targets {
			n.aliasNS = append(n.aliasNS, k.namespace)
		}
		slices.Sort(n.aliasNS)
		n.aliasNS = slices.Compact(n.aliasNS)
		for name := range n.aliasPresent {
			if !n.holdsAlias(name) {
				delete(n.aliasPresent, name)
			}
		}
	}
	if len(added) == 0 && count == len(n.byName) {
		return
	}
	next := make([]serviceName, 0, count)
	for i, s := range n.byName {
		if n.seen[i/64]&(1<<(i%64)) != 0 {
			next = append(next, s)
			continue
		}
		k := objectKey{s.namespace, s.name}
		changed(k, refOf(k, old))
	}
	for _, s := range added {
		k := objectKey{s.namespace, s.name}
		changed(k, refOf(k, targets))
		next = append(next, s)
	}
	slices.SortFunc(next, serviceName.compare)
	n.byName = next
	n.byNS = make([]int32, len(next))
	for i := range n.byNS {
		n.byNS[i] = int32(i)
	}
	slices.SortFunc(n.byNS, func(a, b int32) int {
		x, y := next[a], next[b]
		if c := strings.Compare(x.namespace, y.namespace); c != 0 {
			return c
		}
		return strings.Compare(x.name, y.name)
	})
}

// find returns the position of Service k in byName.
func (n *Names) find(k objectKey) (int, bool) {
	return slices.BinarySearchFunc(n.byName, serviceName{k.name, k.namespace}, serviceName.compare)
}

// LookPerRefresh bounds how many candidate names one Refresh looks up as namespaces, beside
// the names it must look at every time. The kubernetes plugin answers each name that is no
// namespace with a new error (about 40 bytes): at 20,000 names, a look at all of them every
// second made 0.8 MB of garbage a second. So the look goes round the names, this many at a
// time: a namespace made with a Service's name, or after the ExternalName Services it
// holds, is found within candidates/LookPerRefresh refreshes.
const LookPerRefresh = 1000

// look finds which candidate names are namespaces now, and touches those that changed. A
// name is a candidate when a check could find something of it: a Service has it, it holds an
// ExternalName Service (kube-dns answers its apex with them), or it is reserved. Every
// Refresh it looks at the candidates touched by this Refresh's scan, the Service names and
// reserved names that were namespaces (a hit costs nothing, and a namespace deleted is found
// at once) and the reserved names; then at up to n.perLook other candidates, from where the
// last look stopped. Kinds arrive in no order: a namespace that comes after its Services, or
// goes before them, is found when the look comes round to it. The namespaces that are
// candidates only for their ExternalName Services are remembered apart (aliasPresent), so
// that the names looked at every time stay as few as they were.
func (n *Names) look(touched map[string]struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	check := func(set map[string]struct{}, name string) {
		_, was := set[name]
		if is := n.src.HasNamespace(name); is != was {
			touched[name] = struct{}{}
			if is {
				set[name] = struct{}{}
			} else {
				delete(set, name)
			}
		}
	}
	for name := range touched {
		switch {
		case n.hasName(name):
			check(n.present, name)
		case n.holdsAlias(name):
			check(n.aliasPresent, name)
		}
	}
	for name := range n.present {
		if !n.hasName(name) && !n.isReserved(name) {
			delete(n.present, name) // no Service has the name any more: it is no candidate for this set now
			continue
		}
		check(n.present, name)
	}
	for _, name := range n.reserved {
		if !n.hasName(name) {
			check(n.present, name)
		}
	}
	left := n.perLook
	for range len(n.byName) + len(n.aliasNS) {
		if left == 0 {
			break
		}
		if n.next >= len(n.byName)+len(n.aliasNS) {
			n.next = 0
		}
		i := n.next
		n.next++
		if i >= len(n.byName) {
			if name := n.aliasNS[i-len(n.byName)]; !n.hasName(name) { // else it is looked at with the Service names
				check(n.aliasPresent, name)
				left--
			}
			continue
		}
		name := n.byName[i].name
		if i > 0 && n.byName[i-1].name == name {
			continue // one look per name
		}
		if _, ok := n.present[name]; ok {
			continue // looked at above
		}
		check(n.present, name)
		left--
	}
}

// isReserved reports whether name is one of the reserved names (audit.ReservedNames, sorted).
func (n *Names) isReserved(name string) bool {
	_, ok := slices.BinarySearch(n.reserved, name)
	return ok
}

// holdsAlias reports whether namespace name holds an ExternalName Service.
func (n *Names) holdsAlias(name string) bool {
	_, ok := slices.BinarySearch(n.aliasNS, name)
	return ok
}

// hasName reports whether a Service is called name.
func (n *Names) hasName(name string) bool {
	i, _ := slices.BinarySearchFunc(n.byName, serviceName{name: name}, serviceName.compare)
	return i < len(n.byName) && n.byName[i].name == name
}

func (n *Names) linkAlias(k objectKey, target string) {
	if target != "" {
		n.into[target] = append(n.into[target], k)
	}
}

func (n *Names) unlinkAlias(k objectKey, target string) {
	if target == "" {
		return
	}
	if l := slices.DeleteFunc(n.into[target], func(x objectKey) bool { return x == k }); len(l) > 0 {
		n.into[target] = l
	} else {
		delete(n.into, target)
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
	return len(n.byName)
}

// source is where the live findings' objects were read.
const source = "live"

// The reads of audit.Names.

func (n *Names) Namespace(name string) (string, bool) {
	if n.src.HasNamespace(name) {
		return source, true
	}
	return "", false
}

func (n *Names) Service(ns, name string) (audit.Ref, bool) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	k := objectKey{ns, name}
	if _, ok := n.find(k); !ok {
		return audit.Ref{}, false
	}
	return n.ref(k), true
}

func (n *Names) ServicesNamed(name string) []audit.Ref {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var out []audit.Ref
	i, _ := slices.BinarySearchFunc(n.byName, serviceName{name: name}, serviceName.compare)
	for ; i < len(n.byName) && n.byName[i].name == name; i++ {
		out = append(out, n.ref(objectKey{n.byName[i].namespace, name}))
	}
	return out
}

func (n *Names) ServicesIn(ns string) []audit.Ref {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var out []audit.Ref
	i, _ := slices.BinarySearchFunc(n.byNS, ns, func(p int32, ns string) int { return strings.Compare(n.byName[p].namespace, ns) })
	for ; i < len(n.byNS) && n.byName[n.byNS[i]].namespace == ns; i++ {
		out = append(out, n.ref(objectKey{ns, n.byName[n.byNS[i]].name}))
	}
	return out
}

func (n *Names) ref(k objectKey) audit.Ref { return refOf(k, n.targets) }

// refOf is Service k as the checks read it, with the targets of the aliases at one time.
func refOf(k objectKey, targets map[objectKey]string) audit.Ref {
	t, alias := targets[k]
	return audit.Ref{Namespace: k.namespace, Name: k.name, Alias: alias, ExternalName: t, Source: source}
}
