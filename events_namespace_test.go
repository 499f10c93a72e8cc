package nsguard

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsguard/nsguard/internal/fixture"
)

// A live finding about a Namespace becomes a Warning Event on it, with the Namespace's UID
// (it ties the Event to its object), once per check and interval, through the same
// worker and limits as the Events on Pods.
func TestNamespaceFindingEvent(t *testing.T) {
	cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "my-app", UID: "ns-uid-1"}})
	e := testEventer(t, cs, &fakeEventView{}, time.Hour)
	if err := e.start(); err != nil {
		t.Fatal(err)
	}
	f := namespaceFinding{namespace: "my-app", check: "namespace-captures-service", severity: "warning",
		message: "namespace my-app captures the short name of Service my-app in new-namespace-2", fix: "use my-app.new-namespace-2"}
	e.offerFinding(t.Name(), f)
	e.offerFinding(t.Name(), f) // the same finding again within the interval: no second Event
	fixture.Eventually(t, func() bool { return created(cs) == 1 })
	// The API server takes an Event on a cluster-scoped object only in default (or kube-system).
	list, err := cs.EventsV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("Events in default: %v, %v", list, err)
	}
	ev := list.Items[0]
	if ev.Regarding.Kind != "Namespace" || ev.Regarding.Name != "my-app" || ev.Regarding.Namespace != "" || ev.Regarding.UID != "ns-uid-1" ||
		ev.Type != corev1.EventTypeWarning || ev.Reason != "DNSNamespaceCapturesService" || ev.Action != "Audit namespace-captures-service" ||
		!strings.HasPrefix(ev.Note, "warning: namespace my-app captures") || !strings.HasSuffix(ev.Note, "Fix: use my-app.new-namespace-2") {
		t.Errorf("Event %+v", ev)
	}
	time.Sleep(100 * time.Millisecond)
	if n := created(cs); n != 1 {
		t.Errorf("%d Events, want 1", n)
	}
}

// namespace_events alone starts the Events worker, for Namespaces only: an answer through a
// namespace apex puts no Event on the client Pod.
func TestNamespaceEventsAloneLeavePodsAlone(t *testing.T) {
	g, cs := withEvents(t, ModeLog, time.Hour)
	g.podEvents = false // as initView sets it for namespace_events without events
	ask(g, "kubernetes", "10.244.1.5", "my-app.svc.cluster.local.")
	time.Sleep(200 * time.Millisecond)
	if n := created(cs); n != 0 {
		t.Errorf("%d Events on Pods, want none", n)
	}
}
