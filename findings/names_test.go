package findings

import (
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/kubernetes/object"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/internal/fixture"
)

// TestNamesFollowChanges reads a view as it changes, with only its clock of Service changes
// and its Namespace lookups, and tells what changed.
func TestNamesFollowChanges(t *testing.T) {
	src := newFakeSource(fixture.Incident()...)
	n := NewNames(src)

	first := n.Refresh()
	if !slices.Contains(first.Namespaces, "my-app") || len(first.Services) != n.Len() || n.Len() == 0 {
		t.Fatalf("first refresh: %+v", first)
	}
	if f := audit.NamespaceFindings(n, "my-app", "cluster.local"); len(f) != 1 || f[0].Check != audit.CheckNamespaceCapture {
		t.Fatalf("findings of my-app: %+v", f)
	}
	if ch := n.Refresh(); len(ch.Namespaces)+len(ch.Services) != 0 {
		t.Fatalf("nothing changed, but %+v", ch)
	}

	steps := []struct {
		name   string
		change func()
		want   []string // namespace checks touched
		svcs   int      // Services changed
	}{
		{"namespace my-app deleted", func() { src.setNamespace("my-app", false) }, []string{"my-app"}, 0},
		{"namespace my-app back", func() { src.setNamespace("my-app", true) }, []string{"my-app"}, 0},
		{"Service added", func() { src.setService("shop", "cart", "", true) }, []string{"cart", "shop"}, 1},
		{"nothing", func() {}, nil, 0},
		{"namespace com made", func() { src.setNamespace("com", true) }, []string{"com"}, 0},
		{"Service deleted", func() { src.setService("shop", "cart", "", false) }, []string{"cart", "shop"}, 1},
	}
	for _, st := range steps {
		st.change()
		ch := n.Refresh()
		if !slices.Equal(ch.Namespaces, st.want) || len(ch.Services) != st.svcs {
			t.Errorf("%s: got namespaces %v and %d Services, want %v and %d", st.name, ch.Namespaces, len(ch.Services), st.want, st.svcs)
		}
	}
	if _, ok := n.Service("shop", "cart"); ok {
		t.Error("deleted Service shop/cart still in the index")
	}
}

// TestNamesClockSeconds: the kubernetes plugin's clock counts seconds, so a change later in
// the second of the last scan leaves it as it was: a scan in that second is followed by one
// more.
func TestNamesClockSeconds(t *testing.T) {
	p := newPluginCache(fixture.Incident()...)
	n := NewNames(viewOf(t, p))
	sec := int64(1000)
	n.now = func() time.Time { return time.Unix(sec, 0) }
	p.modified.Store(sec - 10)
	n.Refresh()
	sec++
	steps := []struct {
		name   string
		change func()
		svcs   int
	}{
		{"Service added, clock not moved yet", func() {
			p.services = append(p.services, &object.Service{Namespace: "shop", Name: "cart", Version: "1"})
		}, 0},
		{"the clock moves", func() { p.modified.Store(sec) }, 1},
		{"a second change in that second", func() {
			p.services = append(p.services, &object.Service{Namespace: "shop", Name: "till", Version: "1"})
		}, 1},
		{"the second after: one more scan finds nothing", func() { sec++ }, 0},
	}
	for _, st := range steps {
		st.change()
		if ch := n.Refresh(); len(ch.Services) != st.svcs {
			t.Errorf("%s: %d Services told, want %d", st.name, len(ch.Services), st.svcs)
		}
	}
}

// TestNamesAliases: an alias is found from the Service it points at, however its target is
// written, and forgotten when it changes.
func TestNamesAliases(t *testing.T) {
	src := newFakeSource()
	n := NewNames(src)
	src.setService("apps", "a", "legacy.svc.cluster.local", true)
	src.setService("apps", "b", "a.apps.svc.cluster.local.", true)
	n.Refresh()
	if got := n.AliasesOf("a.apps.svc.cluster.local."); len(got) != 1 || got[0].Name != "b" {
		t.Errorf("aliases of apps/a: %+v", got)
	}
	if got := n.AliasesOf("legacy.svc.cluster.local."); len(got) != 1 || got[0].Name != "a" {
		t.Errorf("aliases of legacy: %+v", got)
	}
	if f, ok := audit.AliasFinding(n, "apps", "b", "cluster.local"); !ok || f.Check != audit.CheckAliasNamespace {
		t.Errorf("alias finding of apps/b: %+v", f)
	}
	src.setService("apps", "b", "example.com", true)
	if ch := n.Refresh(); len(ch.Services) != 1 || len(n.AliasesOf("a.apps.svc.cluster.local.")) != 0 {
		t.Errorf("after apps/b changed: %+v, aliases %+v", ch, n.AliasesOf("a.apps.svc.cluster.local."))
	}
}

// TestNamesServiceChanges: each change a check can see is told once, as the Service is now
// (or was last seen, when it went); an update the checks cannot see is not told.
func TestNamesServiceChanges(t *testing.T) {
	steps := []struct {
		name   string
		change func(f *fakeSource)
		want   []audit.Ref
	}{
		{"added", func(f *fakeSource) { f.setService("apps", "a", "", true) },
			[]audit.Ref{{Namespace: "apps", Name: "a", Source: source}}},
		{"version only", func(f *fakeSource) { f.setService("apps", "a", "", true) }, nil},
		{"became an alias", func(f *fakeSource) { f.setService("apps", "a", "x.example", true) },
			[]audit.Ref{{Namespace: "apps", Name: "a", Alias: true, ExternalName: "x.example", Source: source}}},
		{"target changed", func(f *fakeSource) { f.setService("apps", "a", "y.example", true) },
			[]audit.Ref{{Namespace: "apps", Name: "a", Alias: true, ExternalName: "y.example", Source: source}}},
		{"no alias now", func(f *fakeSource) { f.setService("apps", "a", "", true) },
			[]audit.Ref{{Namespace: "apps", Name: "a", Source: source}}},
		{"alias added", func(f *fakeSource) { f.setService("apps", "b", "z.example", true) },
			[]audit.Ref{{Namespace: "apps", Name: "b", Alias: true, ExternalName: "z.example", Source: source}}},
		{"alias deleted, as last seen", func(f *fakeSource) { f.setService("apps", "b", "z.example", false) },
			[]audit.Ref{{Namespace: "apps", Name: "b", Alias: true, ExternalName: "z.example", Source: source}}},
	}
	src := newFakeSource()
	src.setService("apps", "base", "", true)
	n := NewNames(src)
	n.Refresh()
	for _, st := range steps {
		st.change(src)
		if got := n.Refresh().Services; !slices.Equal(got, st.want) {
			t.Errorf("%s: told %+v, want %+v", st.name, got, st.want)
		}
	}
	if got := n.AliasesOf("z.example."); len(got) != 0 {
		t.Errorf("the deleted alias is still found: %+v", got)
	}
	if got := n.ServicesIn("apps"); len(got) != 2 || got[0].Name != "a" || got[1].Name != "base" {
		t.Errorf("Services in apps: %+v", got)
	}
}

// manyNames is an index of services Services in namespace apps, whose look goes round
// perLook names at a time.
func manyNames(services, perLook int) (*fakeSource, *Names) {
	src := newFakeSource()
	for i := range services {
		src.setService("apps", "svc-"+strconv.Itoa(i), "", true)
	}
	src.setNamespace("apps", true)
	n := NewNames(src)
	n.perLook = perLook
	return src, n
}

// TestNamesLookGoesRound: after the first Refresh, which looks at every name, each Refresh
// looks up at most perLook other names, beside those that are namespaces and the reserved
// ones; a namespace made with any Service's name is still found within a round, and one
// deleted at once.
func TestNamesLookGoesRound(t *testing.T) {
	const services, perLook = 2500, 1000
	src, n := manyNames(services, perLook)
	if ch := n.Refresh(); len(ch.Services) != services || src.lookups() < services {
		t.Fatalf("first refresh told %d Services after %d lookups; want every one", len(ch.Services), src.lookups())
	}
	rounds := (services + perLook - 1) / perLook
	budget := perLook + len(audit.ReservedNames())
	for _, i := range []int{0, 1337, services - 1} {
		name := "svc-" + strconv.Itoa(i)
		src.setNamespace(name, true)
		found := 0
		for r := 1; r <= rounds && found == 0; r++ {
			before := src.lookups()
			if ch := n.Refresh(); slices.Equal(ch.Namespaces, []string{name}) {
				found = r
			}
			if looks := src.lookups() - before; looks > budget+1 {
				t.Errorf("a refresh looked up %d names; at most %d", looks, budget+1)
			}
		}
		if found == 0 {
			t.Fatalf("namespace %s not found within %d refreshes", name, rounds)
		}
		src.setNamespace(name, false)
		if ch := n.Refresh(); !slices.Equal(ch.Namespaces, []string{name}) {
			t.Errorf("namespace %s deleted: told %v", name, ch.Namespaces)
		}
	}
}

// TestNamesNamespaceAfterItsServices: kinds reach the view in no order. A namespace that
// comes after the ExternalName Services it holds is told when the look comes round to it,
// as one that came first; so is one deleted before them, and made again.
func TestNamesNamespaceAfterItsServices(t *testing.T) {
	const services, perLook = 2500, 1000
	src, n := manyNames(services, perLook)
	n.Refresh()
	src.setService("aliases", "db", "db.example.com", true)
	if ch := n.Refresh(); !slices.Contains(ch.Namespaces, "aliases") {
		t.Fatalf("the Service's namespace was not checked: %+v", ch)
	}
	rounds := (services+1)/perLook + 1
	for _, step := range []struct {
		name    string
		present bool
	}{{"made after its Service", true}, {"deleted before its Service", false}, {"made again", true}} {
		src.setNamespace("aliases", step.present)
		found := false
		for r := 0; r < rounds && !found; r++ {
			found = slices.Contains(n.Refresh().Namespaces, "aliases")
		}
		if !found {
			t.Errorf("namespace aliases %s: not told within %d refreshes", step.name, rounds)
		}
		if _, ok := n.Namespace("aliases"); ok != step.present {
			t.Errorf("namespace aliases %s: the index says it exists: %v", step.name, ok)
		}
	}
	if fs := audit.NamespaceFindings(n, "aliases", "cluster.local"); len(fs) != 1 || fs[0].Check != audit.CheckApexAnswers {
		t.Errorf("findings of namespace aliases: %+v", fs)
	}
}

// TestNamesHeapAtScale measures what the live findings' index holds at the full size: it
// keeps the names and targets the kubernetes plugin's objects already hold, not copies.
func TestNamesHeapAtScale(t *testing.T) {
	p := fullSize()
	v := viewOf(t, p)
	base := liveHeap()
	n := NewNames(v)
	n.Refresh()
	held := liveHeap() - base
	runtime.KeepAlive(n)
	if n.Len() != len(p.services) {
		t.Fatalf("index holds %d Services", n.Len())
	}
	t.Logf("live findings' index for %d namespaces and %d Services: %.2f MB (%d B/Service)",
		len(p.namespaces), n.Len(), float64(held)/1e6, held/int64(n.Len()))
	if held > 8_000_000 {
		t.Errorf("the index takes %.2f MB; the budget is 8 MB", float64(held)/1e6)
	}
}

// liveHeap is the heap in use after two full collections: what is reachable, and no garbage.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkNamesRefresh is the live findings' work at the full size: a look with no change
// (LookPerRefresh Service names and the reserved names looked up as namespaces), a Service
// updated with nothing the checks read (the scan of every Service, then the look), a Service
// added or deleted (the scan, the index built again, the look), and a namespace made (the
// look finds it).
func BenchmarkNamesRefresh(b *testing.B) {
	p := fullSize()
	n := NewNames(viewOf(b, p))
	n.now = func() time.Time { return time.Unix(1<<40, 0) } // the clock is always behind it: scan only when it moves
	n.Refresh()
	b.Run("change=none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n.Refresh()
		}
	})
	for _, tc := range []struct {
		name     string
		change   func(i int)
		services int // Services a refresh tells of
	}{
		{"change=version", func(i int) { // an update: same key, nothing the checks read
			s := *p.services[0]
			s.Version = strconv.Itoa(i + 2)
			p.services[0] = &s
		}, 0},
		{"change=service", func(i int) {
			if i%2 == 0 {
				p.services = append(p.services, &object.Service{Namespace: "ns0", Name: "extra", Version: "1"})
			} else {
				p.services = p.services[:len(p.services)-1]
			}
		}, 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tc.change(i)
				p.modified.Add(1)
				if ch := n.Refresh(); len(ch.Services) != tc.services {
					b.Fatalf("refresh found %+v", ch)
				}
				i++
			}
		})
	}
	// A namespace made is found when the look comes round to its name; one deleted, at the
	// next look. Each op is both, with the refreshes in between.
	b.Run("change=namespace", func(b *testing.B) {
		b.ReportAllocs()
		const name = "svc7"
		rounds := n.Len()/LookPerRefresh + 2
		for b.Loop() {
			p.namespaces[name] = &object.Namespace{Name: name}
			for r := 0; len(n.Refresh().Namespaces) != 1; r++ {
				if r == rounds {
					b.Fatalf("namespace %s not found in %d refreshes", name, rounds)
				}
			}
			delete(p.namespaces, name)
			if ch := n.Refresh(); len(ch.Namespaces) != 1 {
				b.Fatalf("refresh found %+v", ch)
			}
		}
	})
}
