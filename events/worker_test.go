package events

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nsguard/nsguard/clusterdns"

	"github.com/nsguard/nsguard/internal/fixture"
)

// fakeEventView is a cluster view of Pods that all exist, unless gone.
type fakeEventView struct {
	mu    sync.Mutex
	stale bool
	gone  bool
}

func (v *fakeEventView) Stale() bool { v.mu.Lock(); defer v.mu.Unlock(); return v.stale }
func (v *fakeEventView) PodUID(pod string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return "uid-" + pod, !v.gone
}

func TestMain(m *testing.M) {
	clog.Discard()
	os.Exit(m.Run())
}

// dropped counts what a worker drops, by server and reason.
var dropped = struct {
	sync.Mutex
	n map[[2]string]float64
}{n: map[[2]string]float64{}}

func countDrop(server, reason string) {
	dropped.Lock()
	defer dropped.Unlock()
	dropped.n[[2]string{server, reason}]++
}

func drops(server, reason string) float64 {
	dropped.Lock()
	defer dropped.Unlock()
	return dropped.n[[2]string{server, reason}]
}

// testWorker is a worker over cs that writes as fast as it is given, unless the test sets
// its limit before starting it.
func testWorker(t *testing.T, cs *fake.Clientset, v View, interval time.Duration) *Worker {
	t.Helper()
	w := New(Config{Client: cs, View: v, Interval: interval, Dropped: countDrop,
		Advise: func(o Offer) clusterdns.ApexFix { return clusterdns.ApexFix{Name: o.Name.Namespace, Zone: o.Name.Zone} }})
	w.limit = flowcontrol.NewFakeAlwaysRateLimiter()
	t.Cleanup(w.Stop)
	return w
}

// apexOffer is client Pod pod asking for the apex of namespace ns.
func apexOffer(server, pod, ns string) Offer {
	return Offer{Server: server, Kind: Apex, Name: clusterdns.Name{Shape: clusterdns.NamespaceApex, Zone: "cluster.local.", Namespace: ns},
		Pod: pod, QName: ns + ".svc.cluster.local.", QType: dns.TypeA}
}

func shadowOffer(server, pod, endpoint, service, ns string) Offer {
	return Offer{Server: server, Kind: Shadow, Name: clusterdns.Name{Shape: clusterdns.EndpointName, Zone: "cluster.local.",
		Endpoint: endpoint, Service: service, Namespace: ns}, Pod: pod, Records: true,
		QName: endpoint + "." + service + "." + ns + ".svc.cluster.local.", QType: dns.TypeA}
}

func offerApex(w *Worker, server, pod, ns string) { w.Offer(apexOffer(server, pod, ns)) }

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

// Every Event not recorded is counted, by why.
func TestEventDropReasons(t *testing.T) {
	events := schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
	tests := []struct {
		name   string
		err    error // of the API server's answer to the write
		stale  bool
		gone   bool
		reason string
	}{
		{name: "forbidden", err: apierrors.NewForbidden(events, "", errors.New("RBAC: access denied")), reason: DropForbidden},
		{name: "unauthorized", err: apierrors.NewUnauthorized("token expired"), reason: DropForbidden},
		{name: "invalid", err: apierrors.NewInvalid(schema.GroupKind{Group: "events.k8s.io", Kind: "Event"}, "x",
			field.ErrorList{field.TooLong(field.NewPath("action"), "", maxAction)}), reason: DropRejected},
		{name: "bad request", err: apierrors.NewBadRequest("no"), reason: DropRejected},
		{name: "namespace terminating", err: terminating(), reason: DropRejected},
		{name: "conflict", err: apierrors.NewConflict(events, "x", errors.New("exists")), reason: DropRejected},
		{name: "too many requests", err: apierrors.NewTooManyRequests("slow down", 1), reason: DropRejected},
		{name: "timeout", err: apierrors.NewTimeoutError("slow", 1), reason: DropTimeout},
		{name: "server timeout", err: apierrors.NewServerTimeout(events, "create", 1), reason: DropTimeout},
		{name: "deadline", err: context.DeadlineExceeded, reason: DropTimeout},
		{name: "internal", err: apierrors.NewInternalError(errors.New("etcd")), reason: DropServerError},
		{name: "unavailable", err: apierrors.NewServiceUnavailable("starting"), reason: DropServerError},
		{name: "refused", err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, reason: DropUnreachable},
		{name: "view stale", stale: true, reason: DropUnreachable},
		{name: "pod gone", gone: true, reason: DropPodGone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			if tc.err != nil {
				cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, k8sruntime.Object, error) { return true, nil, tc.err })
			}
			e := testWorker(t, cs, &fakeEventView{stale: tc.stale, gone: tc.gone}, time.Hour)
			e.Start()
			server := t.Name()
			offerApex(e, server, "team/client", "my-app")
			fixture.Eventually(t, func() bool { return drops(server, tc.reason) == 1 })
			e.Stop()
			for _, r := range []string{DropQueueFull, DropStopped, DropPodGone, DropUnreachable, DropTimeout, DropForbidden, DropRejected, DropServerError} {
				if want := map[bool]float64{true: 1}[r == tc.reason]; drops(server, r) != want {
					t.Errorf("%s: %v drops, want %v", r, drops(server, r), want)
				}
			}
		})
	}
}

// terminating is the API server's answer to a create in a namespace being deleted: a 403.
func terminating() error {
	err := apierrors.NewForbidden(schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, "x",
		errors.New("unable to create new content in namespace team because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause})
	return err
}

// validEvent is what the API server checks of an events.k8s.io/v1 Event on create.
func validEvent(ev *eventsv1.Event) []string {
	var errs []string
	check := func(field string, ok bool) {
		if !ok {
			errs = append(errs, field)
		}
	}
	check("metadata.name", len(validation.IsDNS1123Subdomain(ev.Name)) == 0)
	check("metadata.namespace", len(validation.IsDNS1123Subdomain(ev.Namespace)) == 0)
	check("eventTime", !ev.EventTime.IsZero())
	check("type", ev.Type == "Warning" || ev.Type == "Normal")
	check("regarding.namespace", ev.Regarding.Namespace == ev.Namespace)
	check("reportingController", len(validation.IsQualifiedName(ev.ReportingController)) == 0)
	check("reportingInstance", ev.ReportingInstance != "" && len(ev.ReportingInstance) <= 128)
	check("action", ev.Action != "" && len(ev.Action) <= 128)
	check("reason", ev.Reason != "" && len(ev.Reason) <= 128)
	check("note", len(ev.Note) <= 1024)
	check("series", ev.Series == nil)
	check("deprecated fields", ev.DeprecatedCount == 0 && ev.DeprecatedSource.Component == "" && ev.DeprecatedFirstTimestamp.IsZero())
	return errs
}

// Every field is within what the API server accepts, for the longest names there are.
func TestEventFieldsWithinLimits(t *testing.T) {
	a63, b63, b60 := strings.Repeat("a", 63), strings.Repeat("b", 63), strings.Repeat("b", 60)
	long := strings.Repeat("p", 200) + "." + strings.Repeat("q", 52) // a Pod name of 253
	tests := []struct {
		name   string
		o      Offer
		action string // "" for any action within the limit
	}{
		{"issue's shadow", shadowOffer("", "new-namespace-1/client", a63, b60, "new-namespace-1"), ""},
		{"longest shadow", shadowOffer("", "new-namespace-1/client", a63, b63, "new-namespace-1"), ""},
		{"short shadow", shadowOffer("", "new-namespace-1/client", "primary", "db", "new-namespace-1"), "Resolve primary.db"},
		{"longest Pod name", apexOffer("", b63+"/"+long, a63), "Resolve " + a63},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			cs.PrependReactor("create", "events", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
				if errs := validEvent(a.(k8stesting.CreateAction).GetObject().(*eventsv1.Event)); len(errs) > 0 {
					return true, nil, apierrors.NewBadRequest("invalid: " + strings.Join(errs, ", "))
				}
				return false, nil, nil
			})
			e := testWorker(t, cs, &fakeEventView{}, time.Hour)
			e.instance = clip(controller+"-"+strings.Repeat("h", 200), maxInstance)
			e.Start()
			tc.o.Server = t.Name()
			e.Offer(tc.o)
			ns, _, _ := strings.Cut(tc.o.Pod, "/")
			var list *eventsv1.EventList
			fixture.Eventually(t, func() bool {
				list, _ = cs.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
				return len(list.Items) == 1 || drops(t.Name(), DropRejected) > 0
			})
			if drops(t.Name(), DropRejected) > 0 {
				t.Fatalf("the Event was refused: %v", cs.Actions())
			}
			ev := list.Items[0]
			if tc.action != "" && ev.Action != tc.action {
				t.Errorf("action %q, want %q", ev.Action, tc.action)
			}
			if !strings.HasPrefix(ev.Action, "Resolve "+tc.o.Name.Endpoint) {
				t.Errorf("action %q does not say what was typed", ev.Action)
			}
			t.Logf("action (%d): %s", len(ev.Action), ev.Action)
		})
	}
	// A shortened action is the same for the same name, and tells two long names apart.
	x, y := eventAction(a63+"."+b63), eventAction(a63+"."+strings.Repeat("b", 62)+"c")
	if x != eventAction(a63+"."+b63) || x == y || len(x) != maxAction || len(y) != maxAction {
		t.Errorf("shortened actions %q and %q", x, y)
	}
	if got := clip("ééé", 5); got != "éé" {
		t.Errorf("clip cuts a character in two: %q", got)
	}
}

// Events reach the API server only as the write rate lets them: the worker takes a token
// before every write, and the default rate is a token bucket of rate a second after a burst.
// Tokens are handed out by the test, so nothing here depends on how busy the machine is.
func TestEventRate(t *testing.T) {
	if l, ok := New(Config{}).limit.(flowcontrol.RateLimiter); !ok || l.QPS() != rate {
		t.Fatalf("the default write rate is %T, want a token bucket of %d a second", New(Config{}).limit, rate)
	}
	cs := fake.NewClientset()
	e := testWorker(t, cs, &fakeEventView{}, time.Hour)
	g := &gate{tokens: make(chan struct{}, burst)}
	for range burst {
		g.tokens <- struct{}{}
	}
	e.limit = g
	e.Start()
	const extra = 3
	for i := range burst + extra {
		offerApex(e, t.Name(), "team/client", "ns-"+strconv.Itoa(i))
	}
	// The burst is written; the next Event waits at the rate, none written past it.
	fixture.Eventually(t, func() bool { return created(cs) == burst && g.waiting.Load() == 1 })
	if n := created(cs); n != burst {
		t.Fatalf("%d Events written with %d tokens", n, burst)
	}
	for range extra {
		g.tokens <- struct{}{}
	}
	fixture.Eventually(t, func() bool { return created(cs) == burst+extra })
}

// gate is a write rate whose tokens the test hands out, counting the writes waiting for one.
type gate struct {
	tokens  chan struct{}
	waiting atomic.Int32
}

func (g *gate) Wait(ctx context.Context) error {
	select {
	case <-g.tokens:
		return nil
	default:
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-g.tokens:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// blocked is a write rate that never lets a write go: Events wait until stop.
type blocked struct{}

func (blocked) Wait(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

// What waits is bounded: one Event at the worker and queueLen in the queue, however many
// come, with no goroutine of their own. Past it they are counted as queue_full, and what
// waits at a stop or reload is counted as stopped, as is what comes after.
func TestEventWaitingBound(t *testing.T) {
	cs := fake.NewClientset()
	e := testWorker(t, cs, &fakeEventView{}, time.Hour)
	e.limit = blocked{}
	e.Start()
	server := t.Name()
	offerApex(e, server, "team/client", "first")
	fixture.Eventually(t, func() bool { return len(e.queue) == 0 }) // the worker holds it
	goroutines := runtime.NumGoroutine()
	const flood = 2000
	for i := range flood {
		offerApex(e, server, "team/client", "ns-"+strconv.Itoa(i))
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("goroutines grew from %d to %d", goroutines, n)
	}
	if len(e.queue) != queueLen || drops(server, DropQueueFull) != flood-queueLen {
		t.Errorf("%d waiting and %v queue_full, want %d and %d", len(e.queue), drops(server, DropQueueFull), queueLen, flood-queueLen)
	}
	e.Stop()
	offerApex(e, server, "team/client", "late")
	if got, want := drops(server, DropStopped), float64(1+queueLen+1); got != want {
		t.Errorf("%v stopped, want %v: the one at the worker, the queue and the one after", got, want)
	}
	if created(cs) != 0 {
		t.Errorf("%d Events written past a rate that lets none go", created(cs))
	}
}

// Offers racing a stop are each counted once: queued and then stopped, or stopped.
func TestEventStopRace(t *testing.T) {
	e := testWorker(t, fake.NewClientset(), &fakeEventView{}, time.Hour)
	e.limit = blocked{}
	e.Start()
	server := t.Name()
	var wg sync.WaitGroup
	const offers = 4000
	for w := range 4 {
		wg.Go(func() {
			for i := range offers / 4 {
				offerApex(e, server, "team/client", "ns-"+strconv.Itoa(w)+"-"+strconv.Itoa(i))
			}
		})
	}
	time.Sleep(time.Millisecond)
	e.Stop()
	wg.Wait()
	if got := drops(server, DropStopped) + drops(server, DropQueueFull); got != offers {
		t.Errorf("%v of %d offers counted", got, offers)
	}
}

// A Pod and name seen again after the interval add to one Event's series; an Event the API
// server no longer has is made again.
func TestEventSeries(t *testing.T) {
	cs := fake.NewClientset()
	e := testWorker(t, cs, &fakeEventView{}, time.Millisecond)
	e.Start()
	list := func() []eventsv1.Event {
		l, _ := cs.EventsV1().Events("team").List(context.Background(), metav1.ListOptions{})
		return l.Items
	}
	for _, want := range []int32{0, 2, 3} {
		time.Sleep(5 * time.Millisecond)
		offerApex(e, t.Name(), "team/client", "my-app")
		fixture.Eventually(t, func() bool {
			l := list()
			return len(l) == 1 && (want == 0 && l[0].Series == nil || l[0].Series != nil && l[0].Series.Count == want)
		})
	}
	if err := cs.EventsV1().Events("team").Delete(context.Background(), list()[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	offerApex(e, t.Name(), "team/client", "my-app")
	fixture.Eventually(t, func() bool { l := list(); return len(l) == 1 && l[0].Series == nil })
}

// A failed write does not silence the Pod and name for the interval: every later offer is
// written or counted by reason. Offers during the back-off after a failure are counted with
// its reason, without a write; once the API server takes Events again, the next offer after
// the back-off is written, well within the interval.
func TestEventFailedWriteNotSilenced(t *testing.T) {
	cs := fake.NewClientset()
	var failing atomic.Bool
	failing.Store(true)
	cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		if failing.Load() {
			return true, nil, apierrors.NewInternalError(errors.New("etcd"))
		}
		return false, nil, nil
	})
	e := testWorker(t, cs, &fakeEventView{}, time.Hour)
	var mu sync.Mutex
	now := time.Now()
	e.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	e.Start()
	server := t.Name()
	for i := 1; i <= 3; i++ {
		offerApex(e, server, "team/client", "my-app")
		fixture.Eventually(t, func() bool { return drops(server, DropServerError) == float64(i) })
	}
	if n := created(cs); n != 1 {
		t.Errorf("%d writes during the back-off, want the one that failed", n)
	}
	later(retryAfter) // the back-off ends: the next offer is written again, and fails again
	offerApex(e, server, "team/client", "my-app")
	fixture.Eventually(t, func() bool { return drops(server, DropServerError) == 4 && created(cs) == 2 })

	failing.Store(false)
	later(2 * retryAfter) // the back-off doubled
	offerApex(e, server, "team/client", "my-app")
	fixture.Eventually(t, func() bool {
		l, _ := cs.EventsV1().Events("team").List(context.Background(), metav1.ListOptions{})
		return len(l.Items) == 1
	})
	if got := drops(server, DropServerError); got != 4 {
		t.Errorf("%v drops after the write, want 4", got)
	}
}

// A live finding about a Namespace becomes a Warning Event on it, with the Namespace's UID
// (it ties the Event to its object), once per check and interval, through the same
// worker and limits as the Events on Pods.
func TestNamespaceFindingEvent(t *testing.T) {
	cs := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "my-app", UID: "ns-uid-1"}})
	e := testWorker(t, cs, &fakeEventView{}, time.Hour)
	e.Start()
	f := NamespaceFinding{Namespace: "my-app", Check: "namespace-captures-service", Severity: "warning",
		Message: "namespace my-app captures the short name of Service my-app in new-namespace-2", Fix: "use my-app.new-namespace-2"}
	e.OfferFinding(t.Name(), f)
	e.OfferFinding(t.Name(), f) // the same finding again within the interval: no second Event
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
