package nsguard

import (
	"context"
	"sync"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Held answers of two servers, views, zones and client namespaces, counted from several
// goroutines at once into counters that are all made during the run: each series gets every
// answer of its own labels, and the server's suppressed series those of all its clients.
func TestHeldCountersAtOnce(t *testing.T) {
	servers := []*dnsserver.Server{{Addr: "dns://held-a:53"}, {Addr: "dns://held-b:53"}}
	type answer struct {
		server     int
		view, zone string
		ns         string // client namespace, "" unknown
		label      string // its client_namespace label
	}
	answers := []answer{
		{0, "", "cluster.local.", "team-1", "team-1"},
		{0, "", "cluster.local.", "team-2", "team-2"},
		{0, "", "example.org.", "team-1", "team-1"},
		{0, "", "cluster.local.", "", clientUnknown},
		{0, "inside", "cluster.local.", "team-1", "team-1"},
		{1, "", "cluster.local.", "team-1", "team-1"},
	}
	const goroutines, each = 8, 500
	h := heldCounters{labels: &namespaceLabels{}}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for i := range each * len(answers) {
				a := answers[i%len(answers)]
				ctx := context.WithValue(context.Background(), dnsserver.Key{}, servers[a.server])
				if a.view != "" {
					ctx = context.WithValue(ctx, dnsserver.ViewKey{}, a.view)
				}
				cc := h.forClient(ctx, a.zone, a.ns)
				cc.countApex(answerNoData, actionLogged)
				cc.suppressedLine(reasonLimit)
			}
		})
	}
	wg.Wait()

	suppressed := make([]float64, len(servers))
	for _, a := range answers {
		s := servers[a.server].Addr
		got := testutil.ToFloat64(namespaceApexAnswers.WithLabelValues(s, a.zone, a.view, answerNoData, actionLogged, a.label))
		if got != goroutines*each {
			t.Errorf("%s view %q zone %s client %s: %v answers counted, want %d", s, a.view, a.zone, a.label, got, goroutines*each)
		}
		suppressed[a.server] += goroutines * each
	}
	for i, s := range servers {
		if got := testutil.ToFloat64(logLinesSuppressed.WithLabelValues(s.Addr, reasonLimit)); got != suppressed[i] {
			t.Errorf("%s: %v lines suppressed, want %v", s.Addr, got, suppressed[i])
		}
	}
}
