package nsguard

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/events"
	"github.com/nsguard/nsguard/internal/fixture"
)

// withEvents runs nsguard with a view and Events over a fake clientset of the incident.
func withEvents(t *testing.T, mode Mode, interval time.Duration) (*NSGuard, *fake.Clientset) {
	t.Helper()
	v, cs := startView(t, true, fixture.Incident()...)
	g := New(testConfig([]string{"cluster.local."}, mode, dns.RcodeNameError))
	g.view = v
	g.events = events.New(events.Config{Client: cs, View: v, Interval: interval, Advise: g.adviseEvent, Dropped: dropEvent})
	g.podEvents = true
	g.events.Start()
	t.Cleanup(g.events.Stop)
	return g, cs
}

// created counts the Events the fake API server was asked to create.
func created(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.Matches("create", "events") {
			n++
		}
	}
	return n
}

func ask(g *NSGuard, upstream, client, qname string) *dns.Msg {
	g.Next = upstreams[upstream]()
	rec := dnstest.NewRecorder(&test.ResponseWriter{RemoteIP: client})
	g.ServeDNS(context.Background(), rec, query(qname, dns.TypeA, noEDNS))
	return rec.Msg
}

// podEvents waits until the Pod has n Events, and returns them.
func podEvents(t *testing.T, cs *fake.Clientset, ns string, n int) []eventsv1.Event {
	t.Helper()
	var list *eventsv1.EventList
	fixture.Eventually(t, func() bool {
		var err error
		list, err = cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) >= n
	})
	return list.Items
}

// An Event on the client Pod says what was typed, what answered and the fix, once per
// Pod and name in an interval.
func TestEventOnClientPod(t *testing.T) {
	g, cs := withEvents(t, ModeRefuse, time.Hour)
	for range 3 {
		ask(g, "kubernetes", "10.244.1.5", "my-app.svc.cluster.local.")
	}
	ask(g, "kubernetes", "10.244.1.5", "shop.svc.cluster.local.")   // another name: an Event of its own
	ask(g, "kubernetes", "10.244.9.9", "my-app.svc.cluster.local.") // no Pod: nobody to tell
	podEvents(t, cs, "new-namespace-1", 2)
	time.Sleep(200 * time.Millisecond) // a third would show by now
	events := podEvents(t, cs, "new-namespace-1", 2)
	if len(events) != 2 {
		t.Fatalf("%d Events, want one per name: %v", len(events), events)
	}
	byAction := map[string]eventsv1.Event{}
	for _, e := range events {
		byAction[e.Action] = e
	}
	e, ok := byAction["Resolve my-app"]
	if !ok {
		t.Fatalf("no Event for my-app: %v", byAction)
	}
	if e.Type != corev1.EventTypeWarning || e.Reason != "DNSNameThroughNamespace" || e.Regarding.Kind != "Pod" || e.Regarding.Name != "client" ||
		e.Regarding.Namespace != "new-namespace-1" || e.Regarding.UID != "uid-client" || e.ReportingController != pluginName {
		t.Errorf("Event %+v", e)
	}
	for _, want := range []string{
		`my-app.svc.cluster.local. A, what the search list makes of "my-app", was answered through namespace my-app, not a Service`,
		"nsguard refused the answer",
		"Fix: no Service my-app in new-namespace-1; Service my-app exists in legacy, new-namespace-2; use my-app.legacy",
	} {
		if !strings.Contains(e.Note, want) {
			t.Errorf("note lacks %q:\n%s", want, e.Note)
		}
	}
}

// The query path hands an Event over without allocating and without waiting: when the
// queue is full, the Event is dropped and counted, and the answer is the same.
func TestEventQueueFull(t *testing.T) {
	cs := fake.NewClientset()
	g := New(testConfig([]string{"cluster.local."}, ModeLog, dns.RcodeNameError))
	v, _ := startView(t, true, fixture.Incident()...)
	g.view = v
	g.events = events.New(events.Config{Client: cs, View: v, Interval: time.Hour, Advise: g.adviseEvent, Dropped: dropEvent}) // not started: nothing takes from the queue
	g.podEvents = true
	d := decision{kind: apexKind, name: clusterdns.Name{Shape: clusterdns.NamespaceApex, Zone: "cluster.local.", Namespace: "my-app"}, pod: "new-namespace-1/client", action: actionLogged}
	r := query("my-app.svc.cluster.local.", dns.TypeA, noEDNS)
	cc := g.counters.forClient(context.Background(), "cluster.local.", "new-namespace-1")
	drops := testutil.ToFloat64(eventsDropped.WithLabelValues("", events.DropQueueFull))
	const queueLen = 64
	for range queueLen {
		g.offer(cc, r, &d)
	}
	if n := testing.AllocsPerRun(100, func() { g.offer(cc, r, &d) }); n != 0 {
		t.Errorf("offer allocates %v times", n)
	}
	if got := testutil.ToFloat64(eventsDropped.WithLabelValues("", events.DropQueueFull)) - drops; got != 101 {
		t.Errorf("%v drops counted, want the 101 past the queue", got)
	}
	// The held path costs the same with Events on.
	g.Next = upstreams["kubernetes"]()
	w := &test.ResponseWriter{RemoteIP: "10.244.1.5"}
	serve := func() { g.ServeDNS(context.Background(), w, r) }
	with := testing.AllocsPerRun(100, serve)
	g.events = nil
	g.podEvents = false
	without := testing.AllocsPerRun(100, serve)
	if with != without {
		t.Errorf("a held answer allocates %v times with Events, %v without", with, without)
	}
}

// With the API server out of reach, Events are dropped and counted, not piled up.
func TestEventAPIServerAway(t *testing.T) {
	g, cs := withEvents(t, ModeLog, time.Hour)
	g.view.(*forcedView).stale.Store(true)
	drops := testutil.ToFloat64(eventsDropped.WithLabelValues("", events.DropUnreachable))
	if m := ask(g, "kubernetes", "10.244.1.5", "my-app.svc.cluster.local."); m.Rcode != dns.RcodeSuccess {
		t.Errorf("the answer changed: %v", m)
	}
	fixture.Eventually(t, func() bool {
		return testutil.ToFloat64(eventsDropped.WithLabelValues("", events.DropUnreachable))-drops == 1
	})
	if list, _ := cs.EventsV1().Events("new-namespace-1").List(context.Background(), metav1.ListOptions{}); len(list.Items) != 0 {
		t.Errorf("Events sent while the API server was away: %v", list.Items)
	}
}

// The client_namespace label holds the client's namespace, and at most maxClientNamespaces
// of them per server.
func TestClientNamespaceLabel(t *testing.T) {
	n := &namespaceLabels{}
	if got := n.value("dns://:53", ""); got != clientUnknown {
		t.Errorf("no Pod: %q", got)
	}
	for i := range maxClientNamespaces {
		if got := n.value("dns://:53", fmt.Sprintf("ns-%d", i)); got != fmt.Sprintf("ns-%d", i) {
			t.Fatalf("namespace %d: %q", i, got)
		}
	}
	if got := n.value("dns://:53", "one-too-many"); got != clientOther {
		t.Errorf("past the bound: %q, want %q", got, clientOther)
	}
	if got := n.value("dns://:53", "ns-7"); got != "ns-7" {
		t.Errorf("a namespace seen before keeps its series: %q", got)
	}
	if got := n.value("dns://10.0.0.1:53", "one-too-many"); got != "one-too-many" {
		t.Errorf("each server has its own bound: %q", got)
	}
	if a := testing.AllocsPerRun(100, func() { n.value("dns://:53", "ns-7") }); a != 0 {
		t.Errorf("a label seen before allocates %v times", a)
	}
}

// namespace_events alone starts the Events worker, for Namespaces only: an answer through a
// namespace apex puts no Event on the client Pod.
func TestNamespaceEventsAloneLeavePodsAlone(t *testing.T) {
	g, cs := withEvents(t, ModeLog, time.Hour)
	g.podEvents = false // as start-up sets it for namespace_events without events
	ask(g, "kubernetes", "10.244.1.5", "my-app.svc.cluster.local.")
	time.Sleep(200 * time.Millisecond)
	if n := created(cs); n != 0 {
		t.Errorf("%d Events on Pods, want none", n)
	}
}
