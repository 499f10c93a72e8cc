package nsguard

import (
	"errors"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/coredns/coredns/plugin/kubernetes/object"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsguard/nsguard/clusterview"
)

// pluginCache is the kubernetes plugin's cache as the live findings read it: its Service list,
// its clock of Service changes and its Namespace lookups, which fail with a new error for a
// name that is no namespace, as the plugin's do.
type pluginCache struct {
	services   []*object.Service
	namespaces map[string]*object.Namespace
	modified   atomic.Int64
}

func (p *pluginCache) ServiceList() []*object.Service {
	return append([]*object.Service(nil), p.services...)
}
func (p *pluginCache) SvcIndex(string) []*object.Service      { return nil }
func (p *pluginCache) EpIndex(string) []*object.Endpoints     { return nil }
func (p *pluginCache) HasSynced() bool                        { return true }
func (p *pluginCache) Modified(kubernetes.ModifiedMode) int64 { return p.modified.Load() }
func (p *pluginCache) GetNamespaceByName(name string) (*object.Namespace, error) {
	if n := p.namespaces[name]; n != nil {
		return n, nil
	}
	return nil, errors.New("namespace not found")
}

// fullSize is the cluster: 5,000 namespaces of 4 Services each, every Service name
// its own (so 20,000 candidates to look up), one in 20 an ExternalName alias to a Service of
// the next namespace, and one capture: namespace ns1 and a Service ns1 in ns0.
func fullSize() *pluginCache {
	p := &pluginCache{namespaces: map[string]*object.Namespace{}}
	for j := range 5000 {
		ns := "ns" + strconv.Itoa(j)
		p.namespaces[ns] = &object.Namespace{Name: ns}
		for i := range 4 {
			k := 4*j + i
			s := &object.Service{Namespace: ns, Name: "svc" + strconv.Itoa(k), Version: "1", Type: corev1.ServiceTypeClusterIP}
			if k%20 == 1 {
				s.Type, s.ExternalName = corev1.ServiceTypeExternalName, "svc"+strconv.Itoa(k+4)+".ns"+strconv.Itoa(j+1)+".svc.cluster.local"
			}
			p.services = append(p.services, s)
		}
	}
	p.services = append(p.services, &object.Service{Namespace: "ns0", Name: "ns1", Version: "1", Type: corev1.ServiceTypeClusterIP})
	return p
}

func startLive(tb testing.TB, p *pluginCache) *liveFindings {
	v := clusterview.New(clusterview.Config{Client: fake.NewClientset()})
	run := v.Start(p)
	tb.Cleanup(run.Stop)
	for !v.Synced() {
		runtime.Gosched()
	}
	l := newLiveFindings(v, []string{"cluster.local."}, nil, newLogLimiter(defaultLogInterval, defaultLogLimit), []string{"dns://:1053-bench-" + tb.Name()})
	l.tick() // the first look: every check once
	return l
}

// BenchmarkLiveFindings is the live findings' work each second at the full size (5,000
// namespaces, 20,000 Services): with nothing changed (every candidate name looked up as a
// namespace), after one Service changed (every Service compared, then the checks of its
// names and of the aliases that lead to it), and after a namespace was made or deleted
// (the checks of that name). Compare with benchstat -col /change.
func BenchmarkLiveFindings(b *testing.B) {
	p := fullSize()
	l := startLive(b, p)
	if n := l.book.counts["namespace-captures-service"]["warning"]; n != 1 {
		b.Fatalf("%d captures, want 1", n)
	}
	b.Run("change=none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l.tick()
		}
	})
	b.Run("change=service", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			s := *p.services[5] // svc5 in ns1, which alias svc1 in ns0 leads to
			i++
			s.Version = strconv.Itoa(i + 1)
			p.services[5] = &s
			p.modified.Add(1)
			l.tick()
		}
	})
	b.Run("change=namespace", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := p.namespaces["svc7"]; ok { // a namespace named like Service svc7: a capture
				delete(p.namespaces, "svc7")
			} else {
				p.namespaces["svc7"] = &object.Namespace{Name: "svc7"}
			}
			l.tick()
		}
	})
}

// TestLiveFindingsHeap is what the live findings hold at the full size, beyond the
// kubernetes plugin's own objects: the index of names and the book.
func TestLiveFindingsHeap(t *testing.T) {
	p := fullSize()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	l := startLive(t, p)
	held := heap() - base
	runtime.KeepAlive(l)
	runtime.KeepAlive(p)
	t.Logf("live findings at 5,000 namespaces and %d Services: %.2f MB held", len(p.services), float64(held)/1e6)
	if held > 8e6 {
		t.Errorf("the live findings hold %.2f MB; the budget is 8 MB", float64(held)/1e6)
	}
}
