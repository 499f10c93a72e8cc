package findings

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/coredns/coredns/plugin/kubernetes/object"
	clog "github.com/coredns/coredns/plugin/pkg/log"
)

func TestMain(m *testing.M) {
	clog.Discard()
	os.Exit(m.Run())
}

// once is a log limit that lets each key through once, as log_interval does within it.
func once() func(key []byte) (bool, uint64, uint64, string) {
	seen := map[string]bool{}
	return func(key []byte) (bool, uint64, uint64, string) {
		if seen[string(key)] {
			return false, 0, 0, "repeat"
		}
		seen[string(key)] = true
		return true, 0, 0, ""
	}
}

func startLive(tb testing.TB, p *pluginCache) *Live {
	l := New(viewOf(tb, p), NewBook(nil), Config{Zones: []string{"cluster.local."}, Allow: once()})
	l.book.take(l)
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
	if n := l.book.Counts()["namespace-captures-service"]["warning"]; n != 1 {
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
	base := liveHeap()
	l := startLive(t, p)
	held := liveHeap() - base
	runtime.KeepAlive(l)
	runtime.KeepAlive(p)
	t.Logf("live findings at 5,000 namespaces and %d Services: %.2f MB held", len(p.services), float64(held)/1e6)
	if held > 8e6 {
		t.Errorf("the live findings hold %.2f MB; the budget is 8 MB", float64(held)/1e6)
	}
}
