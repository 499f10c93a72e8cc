package clusterview

import (
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/kubernetes/object"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/internal/fixture"
)

func (c *controller) addService(t testing.TB, s *corev1.Service) {
	t.Helper()
	o, err := object.ToService(s)
	if err == nil {
		err = c.services.Add(o)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (c *controller) deleteService(t testing.TB, ns, name string) {
	t.Helper()
	o, ok, _ := c.services.GetByKey(ns + "/" + name)
	if !ok {
		t.Fatalf("no Service %s/%s", ns, name)
	}
	if err := c.services.Delete(o); err != nil {
		t.Fatal(err)
	}
}

func service(ns, name, externalName string) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}}
	if externalName != "" {
		s.Spec.Type, s.Spec.ExternalName = corev1.ServiceTypeExternalName, externalName
	}
	return s
}

// TestNamesFollowChanges reads the kubernetes plugin's caches as they change, with only the
// plugin's clock of Service changes and its Namespace lookups, and tells what changed.
func TestNamesFollowChanges(t *testing.T) {
	c := newController(t, fixture.Incident()...)
	n := newNames(shared{c})
	sec := int64(1000)
	n.now = func() time.Time { return time.Unix(sec, 0) }
	c.modified.Store(sec - 10)

	first := n.Refresh()
	if !slices.Contains(first.Namespaces, "my-app") || len(first.Services) != n.Len() || n.Len() == 0 {
		t.Fatalf("first refresh: %+v", first)
	}
	if f := audit.NamespaceFindings(n, "my-app", "cluster.local"); len(f) != 1 || f[0].Check != audit.CheckNamespaceCapture {
		t.Fatalf("findings of my-app: %+v", f)
	}
	sec++
	if ch := n.Refresh(); len(ch.Namespaces)+len(ch.Services) != 0 {
		t.Fatalf("nothing changed, but %+v", ch)
	}

	steps := []struct {
		name   string
		change func()
		want   []string // namespace checks touched
		svcs   int      // Services changed
	}{
		{"namespace my-app deleted", func() { delete(c.namespaces, "my-app") }, []string{"my-app"}, 0},
		{"namespace my-app back", func() { c.namespaces["my-app"] = &object.Namespace{Name: "my-app"} }, []string{"my-app"}, 0},
		{"Service added, clock not moved yet", func() { c.addService(t, service("shop", "cart", "")) }, nil, 0},
		{"the clock moves", func() { c.modified.Store(sec) }, []string{"cart", "shop"}, 1},
		// In the same second as the last scan: the clock stays, the next look scans again.
		{"a second change in that second", func() { c.addService(t, service("shop", "till", "")) }, []string{"shop", "till"}, 1},
		{"the second after: one more scan finds nothing", func() { sec++ }, nil, 0},
		{"namespace com made", func() { c.namespaces["com"] = &object.Namespace{Name: "com"} }, []string{"com"}, 0},
		{"Service deleted", func() { c.deleteService(t, "shop", "cart"); sec++; c.modified.Store(sec) }, []string{"cart", "shop"}, 1},
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
	if got := n.ServicesIn("shop"); !slices.ContainsFunc(got, func(r audit.Ref) bool { return r.Name == "till" }) ||
		slices.ContainsFunc(got, func(r audit.Ref) bool { return r.Name == "cart" }) {
		t.Errorf("Services in shop: %+v", got)
	}
}

// TestNamesAliases: an alias is found from the Service it points at, however its target is
// written, and forgotten when it changes.
func TestNamesAliases(t *testing.T) {
	o := newOwned()
	n := newNames(o)
	o.setService(&serviceObj{meta: meta{namespace: "apps", name: "a", version: "1"}, externalName: "legacy.svc.cluster.local"}, true)
	o.setService(&serviceObj{meta: meta{namespace: "apps", name: "b", version: "1"}, externalName: "a.apps.svc.cluster.local."}, true)
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
	o.setService(&serviceObj{meta: meta{namespace: "apps", name: "b", version: "2"}, externalName: "example.com"}, true)
	if ch := n.Refresh(); len(ch.Services) != 1 || len(n.AliasesOf("a.apps.svc.cluster.local.")) != 0 {
		t.Errorf("after apps/b changed: %+v, aliases %+v", ch, n.AliasesOf("a.apps.svc.cluster.local."))
	}
}

// scaleController is the kubernetes plugin's cache of the full-size cluster: 5,000
// namespaces and 20,000 Services, each with a name of its own, so every Service's name is a
// candidate to look up.
func scaleController(t testing.TB) *controller {
	c := newScaleCluster(scaleNamespaces)
	var objs []k8sruntime.Object
	for j := range scaleNamespaces {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNamespace(j)}})
	}
	c.eachService(func(o k8sruntime.Object) { objs = append(objs, o) })
	return newController(t, objs...)
}

// TestNamesHeapAtScale measures what the live findings' index holds at the full size: it
// keeps the names and targets the kubernetes plugin's objects already hold, not copies.
func TestNamesHeapAtScale(t *testing.T) {
	c := scaleController(t)
	base := scaleLiveHeap()
	n := newNames(shared{c})
	n.Refresh()
	held := scaleLiveHeap() - base
	runtime.KeepAlive(n)
	if n.Len() != scaleNamespaces*scaleServicesPerNS {
		t.Fatalf("index holds %d Services", n.Len())
	}
	t.Logf("live findings' index for %d namespaces and %d Services: %.2f MB (%d B/Service)",
		scaleNamespaces, n.Len(), scaleMB(held), held/int64(n.Len()))
	if held > 8_000_000 {
		t.Errorf("the index takes %.2f MB; the budget is 8 MB", scaleMB(held))
	}
}

// BenchmarkNamesRefresh is the live findings' work at the full size: a look with no change
// (LookPerRefresh Service names and the reserved names looked up as namespaces), a Service updated
// with nothing the checks read (the scan of every Service, then the look), a Service added
// or deleted (the scan, the index built again, the look), and a namespace made (the look
// finds it).
func BenchmarkNamesRefresh(b *testing.B) {
	c := scaleController(b)
	n := newNames(shared{c})
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
			s := service(scaleNamespace(0), scaleService(0), "")
			s.ResourceVersion = strconv.Itoa(i + 2)
			c.addService(b, s)
		}, 0},
		{"change=service", func(i int) {
			if i%2 == 0 {
				c.addService(b, service(scaleNamespace(0), "extra", ""))
			} else {
				c.deleteService(b, scaleNamespace(0), "extra")
			}
		}, 1},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				tc.change(i)
				c.modified.Add(1)
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
		name := scaleService(7)
		rounds := n.Len()/LookPerRefresh + 1
		for b.Loop() {
			c.namespaces[name] = &object.Namespace{Name: name}
			for r := 0; len(n.Refresh().Namespaces) != 1; r++ {
				if r == rounds {
					b.Fatalf("namespace %s not found in %d refreshes", name, rounds)
				}
			}
			delete(c.namespaces, name)
			if ch := n.Refresh(); len(ch.Namespaces) != 1 {
				b.Fatalf("refresh found %+v", ch)
			}
		}
	})
}

// TestNamesServiceChanges: each change a check can see is told once, as the Service is now
// (or was last seen, when it went); an update the checks cannot see is not told.
func TestNamesServiceChanges(t *testing.T) {
	svc := func(name, target, version string) *serviceObj {
		return &serviceObj{meta: meta{namespace: "apps", name: name, version: version}, externalName: target}
	}
	steps := []struct {
		name   string
		change func(o *owned)
		want   []audit.Ref
	}{
		{"added", func(o *owned) { o.setService(svc("a", "", "2"), true) },
			[]audit.Ref{{Namespace: "apps", Name: "a", Source: source}}},
		{"version only", func(o *owned) { o.setService(svc("a", "", "3"), true) }, nil},
		{"became an alias", func(o *owned) { o.setService(svc("a", "x.example", "4"), true) },
			[]audit.Ref{{Namespace: "apps", Name: "a", Alias: true, ExternalName: "x.example", Source: source}}},
		{"target changed", func(o *owned) { o.setService(svc("a", "y.example", "5"), true) },
			[]audit.Ref{{Namespace: "apps", Name: "a", Alias: true, ExternalName: "y.example", Source: source}}},
		{"no alias now", func(o *owned) { o.setService(svc("a", "", "6"), true) },
			[]audit.Ref{{Namespace: "apps", Name: "a", Source: source}}},
		{"alias added", func(o *owned) { o.setService(svc("b", "z.example", "7"), true) },
			[]audit.Ref{{Namespace: "apps", Name: "b", Alias: true, ExternalName: "z.example", Source: source}}},
		{"alias deleted, as last seen", func(o *owned) { o.setService(svc("b", "z.example", "7"), false) },
			[]audit.Ref{{Namespace: "apps", Name: "b", Alias: true, ExternalName: "z.example", Source: source}}},
	}
	o := newOwned()
	o.setService(svc("base", "", "1"), true)
	n := newNames(o)
	n.Refresh()
	for _, st := range steps {
		st.change(o)
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

// lookCounter counts the namespace lookups of a source: each that misses is garbage in the
// kubernetes plugin.
type lookCounter struct {
	services
	looks int
}

func (c *lookCounter) hasNamespace(name string) bool { c.looks++; return c.services.hasNamespace(name) }

// TestNamesLookGoesRound: after the first Refresh, which looks at every name, each Refresh
// looks up at most perLook other names, beside those that are namespaces and the reserved
// ones; a namespace made with any Service's name is still found within a round, and one
// deleted at once.
func TestNamesLookGoesRound(t *testing.T) {
	const services, perLook = 2500, 1000
	o := newOwned()
	for i := range services {
		o.setService(&serviceObj{meta: meta{namespace: "apps", name: "svc-" + strconv.Itoa(i), version: "1"}}, true)
	}
	o.setNamespace(&namespaceObj{meta{name: "apps"}}, true)
	src := &lookCounter{services: o}
	n := newNames(src)
	n.perLook = perLook
	if ch := n.Refresh(); len(ch.Services) != services || src.looks < services {
		t.Fatalf("first refresh told %d Services after %d lookups; want every one", len(ch.Services), src.looks)
	}
	rounds := (services + perLook - 1) / perLook
	budget := perLook + len(audit.ReservedNames())
	for _, i := range []int{0, 1337, services - 1} {
		name := "svc-" + strconv.Itoa(i)
		o.setNamespace(&namespaceObj{meta{name: name}}, true)
		found := 0
		for r := 1; r <= rounds && found == 0; r++ {
			src.looks = 0
			if ch := n.Refresh(); slices.Equal(ch.Namespaces, []string{name}) {
				found = r
			}
			if src.looks > budget+1 {
				t.Errorf("a refresh looked up %d names; at most %d", src.looks, budget+1)
			}
		}
		if found == 0 {
			t.Fatalf("namespace %s not found within %d refreshes", name, rounds)
		}
		o.setNamespace(&namespaceObj{meta{name: name}}, false)
		if ch := n.Refresh(); !slices.Equal(ch.Namespaces, []string{name}) {
			t.Errorf("namespace %s deleted: told %v", name, ch.Namespaces)
		}
	}
}
