package nsguard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/nsguard/nsguard/clusterdns"
)

// Kubernetes Events tell the team that owns a Pod what its lookups ran into, where it
// already looks: kubectl describe pod, kubectl get events.
const (
	reasonApex   = "DNSNameThroughNamespace"
	reasonShadow = "DNSEndpointShadow"

	// eventRate and eventBurst are what one replica writes to the API server: 10 Events at
	// once, then 2 a second. That stays under client-go's default 5 requests a second, which
	// the informers share, and is a small part of a busy API server's writes.
	eventRate  = 2
	eventBurst = 10
	// eventQueue bounds the Events waiting for the rate, in count and so in memory (an item
	// is a few strings of one question): at most 32 s of writes. Past it they are dropped.
	eventQueue = 64
	// eventWriteTimeout bounds one write, client-go's retries included.
	eventWriteTimeout = 10 * time.Second
	// maxEventKeys bounds the memory of which Pod and name got an Event, like the log limiter's.
	maxEventKeys = 10000
	// dropLogEvery is how often the log tells of Events dropped for one reason.
	dropLogEvery = time.Minute

	// Limits of events.k8s.io/v1, past which the API server refuses an Event.
	maxAction   = 128
	maxNote     = 1024
	maxInstance = 128 // reportingInstance
	maxName     = 253 // metadata.name, a DNS subdomain
)

// eventView is what Events need of the cluster view.
type eventView interface {
	Stale() bool                      // cut off from the API server
	PodUID(pod string) (string, bool) // "namespace/name" → UID, when known
}

// eventItem is what the query path hands over: values only, so it neither allocates nor
// shares a message that the server may still change.
type eventItem struct {
	server  string
	d       decision // d.pod is the client Pod, "namespace/name"
	qname   string
	qtype   uint16
	finding *namespaceFinding // instead, a live finding about a Namespace
}

// namespaceFinding is a live finding whose first object is a Namespace: its Event goes on
// that Namespace, so that the Namespace's Events say what it captures.
type namespaceFinding struct {
	namespace, check, severity, message, fix string
}

// findingReasons are the Events' reasons of the live checks about a Namespace.
var findingReasons = map[string]string{
	"namespace-captures-service": "DNSNamespaceCapturesService",
	"namespace-apex-answers":     "DNSNamespaceApexAnswers",
	"reserved-namespace":         "DNSReservedNamespace",
}

// eventKey is one Pod and one name: at most one Event each per interval.
type eventKey struct {
	pod, name string
	kind      kind
}

// eventSent is the Event of one key: when it was last written, and its series so far.
type eventSent struct {
	at    time.Time
	name  string // the Event's metadata.name; "" until one was created
	count int32  // occurrences in its series
}

// rateWaiter is the write rate: Wait returns when the next write may go.
type rateWaiter interface {
	Wait(ctx context.Context) error
}

// eventer writes Events on client Pods, one worker at eventRate: what waits is bounded by
// its queue, and every Event not written is counted by reason. Repeats of a Pod and name
// after the interval make its Event a series, as Kubernetes does. The query path never
// waits for it.
type eventer struct {
	view     eventView
	client   kubernetes.Interface
	interval time.Duration
	advise   func(decision) clusterdns.ApexFix
	queue    chan eventItem
	limit    rateWaiter
	instance string
	now      func() time.Time

	mu     sync.RWMutex // offers hold it shared, so that stop knows none is half done
	closed bool         // stopped: an offer is counted, not queued
	cancel context.CancelFunc
	done   chan struct{}

	// The worker's own.
	sent   map[eventKey]*eventSent
	logged map[string]time.Time // drop reason → when the log last told of it
}

// newEventer makes Events for the view's Pods; advise is what to change for an apex name.
func newEventer(v eventView, client kubernetes.Interface, interval time.Duration, advise func(decision) clusterdns.ApexFix) *eventer {
	host, _ := os.Hostname()
	return &eventer{
		view: v, client: client, interval: interval, advise: advise,
		queue:    make(chan eventItem, eventQueue),
		limit:    flowcontrol.NewTokenBucketRateLimiter(eventRate, eventBurst),
		instance: clip(pluginName+"-"+host, maxInstance),
		now:      time.Now,
		sent:     map[eventKey]*eventSent{},
		logged:   map[string]time.Time{},
	}
}

// offer queues an Event for d, or counts it dropped when the queue is full or stopped.
func (e *eventer) offer(server string, r *dns.Msg, d decision) {
	e.enqueue(eventItem{server: server, d: d, qname: r.Question[0].Name, qtype: r.Question[0].Qtype})
}

// offerFinding queues an Event on the Namespace a live finding is about.
func (e *eventer) offerFinding(server string, f namespaceFinding) {
	e.enqueue(eventItem{server: server, finding: &f})
}

func (e *eventer) enqueue(it eventItem) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		eventDrops.get(serverLabels{it.server, dropStopped}).Inc()
		return
	}
	select {
	case e.queue <- it:
	default:
		eventDrops.get(serverLabels{it.server, dropQueueFull}).Inc()
	}
}

func (e *eventer) start() error {
	ctx, cancel := context.WithCancel(withPluginLogger(context.Background()))
	e.cancel, e.done = cancel, make(chan struct{})
	go e.run(ctx)
	return nil
}

// stop ends the worker, and counts what was still waiting: a reload must neither leak the
// worker nor lose Events uncounted.
func (e *eventer) stop() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	if e.cancel != nil {
		e.cancel()
		<-e.done
	}
	for {
		select {
		case it := <-e.queue:
			eventDrops.get(serverLabels{it.server, dropStopped}).Inc()
		default:
			return nil
		}
	}
}

func (e *eventer) run(ctx context.Context) {
	defer close(e.done)
	for {
		select {
		case <-ctx.Done():
			return
		case it := <-e.queue:
			e.record(ctx, it)
		}
	}
}

// record writes one Event, unless this Pod and name had one within the interval, or the API
// server is out of reach: a write then would only wait and fail.
func (e *eventer) record(ctx context.Context, it eventItem) {
	key := eventKey{pod: it.d.pod, name: typedName(it.d), kind: it.d.kind}
	if it.finding != nil {
		key = eventKey{pod: "Namespace " + it.finding.namespace, name: it.finding.check, kind: findingKind}
	}
	s := e.sent[key]
	if s != nil && e.now().Sub(s.at) < e.interval {
		return
	}
	if e.view.Stale() {
		e.drop(it.server, dropUnreachable, nil)
		return
	}
	var ev eventFor
	if it.finding != nil {
		ev = e.namespaceEvent(it.finding)
	} else {
		uid, ok := e.view.PodUID(it.d.pod)
		if !ok {
			e.drop(it.server, dropPodGone, nil)
			return
		}
		ev = e.podEvent(it, key.name, uid)
	}
	if err := e.limit.Wait(ctx); err != nil {
		e.drop(it.server, dropStopped, nil)
		return
	}
	if s == nil {
		if len(e.sent) >= maxEventKeys {
			clear(e.sent) // can only make a new Event where a series would have grown
		}
		s = &eventSent{}
		e.sent[key] = s
	}
	s.at = e.now()
	if err := e.write(ctx, s, ev); err != nil {
		e.drop(it.server, dropReason(err), err)
	}
}

// eventFor is what one Event says, and of what.
type eventFor struct {
	namespace            string
	regarding            corev1.ObjectReference // UID empty: looked up when written
	reason, action, note string
}

func (e *eventer) podEvent(it eventItem, typed, uid string) eventFor {
	ns, pod, _ := strings.Cut(it.d.pod, "/")
	reason := reasonApex
	if it.d.kind == shadowKind {
		reason = reasonShadow
	}
	return eventFor{
		namespace: ns,
		regarding: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: pod, UID: types.UID(uid)},
		reason:    reason, action: eventAction(typed), note: e.note(it, typed),
	}
}

// namespaceEvent is the Event of a live finding, on the Namespace it is about. A Namespace
// is cluster-scoped, and the API server keeps the Events of such objects in namespace
// default. The view keeps no Namespace's UID, which ties an Event to its object: write
// reads it.
func (e *eventer) namespaceEvent(f *namespaceFinding) eventFor {
	note := strings.ToValidUTF8(f.severity+": "+f.message+". Fix: "+f.fix, "?")
	if len(note) > maxNote {
		note = clip(note, maxNote-3) + "..."
	}
	return eventFor{
		namespace: metav1.NamespaceDefault,
		regarding: corev1.ObjectReference{Kind: "Namespace", APIVersion: "v1", Name: f.namespace},
		reason:    findingReasons[f.check], action: clip("Audit "+f.check, maxAction), note: note,
	}
}

// write adds to the key's series, or creates its Event when it has none the API server keeps.
func (e *eventer) write(ctx context.Context, s *eventSent, ev eventFor) error {
	ctx, cancel := context.WithTimeout(ctx, eventWriteTimeout)
	defer cancel()
	events := e.client.EventsV1().Events(ev.namespace)
	now := metav1.NewMicroTime(s.at)
	if s.name != "" {
		patch, err := json.Marshal(map[string]eventsv1.EventSeries{"series": {Count: s.count + 1, LastObservedTime: now}})
		if err != nil {
			return err
		}
		_, err = events.Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			s.count++
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		s.name = "" // expired (the API server's event TTL) or deleted: start again
	}
	if ev.regarding.Kind == "Namespace" {
		n, err := e.client.CoreV1().Namespaces().Get(ctx, ev.regarding.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ev.regarding.UID = n.UID
	}
	made, err := events.Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: eventName(ev.regarding.Name, s.at), Namespace: ev.namespace},
		EventTime:           now,
		Regarding:           ev.regarding,
		Type:                corev1.EventTypeWarning,
		Reason:              ev.reason,
		Action:              ev.action,
		Note:                ev.note,
		ReportingController: pluginName,
		ReportingInstance:   e.instance,
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.name, s.count = made.Name, 1
	return nil
}

// drop counts an Event not written, and tells the log once a minute per reason, so that a
// missing permission shows where an operator looks.
func (e *eventer) drop(server, reason string, err error) {
	eventDrops.get(serverLabels{server, reason}).Inc()
	if err == nil {
		return
	}
	if now := e.now(); now.Sub(e.logged[reason]) >= dropLogEvery {
		e.logged[reason] = now
		log.Warningf("Event not recorded (%s, counted in events_dropped_total): %v", reason, err)
	}
}

// dropReason is the events_dropped_total reason of a failed write.
func dropReason(err error) string {
	var ne net.Error
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, context.Canceled): // only stop cancels
		return dropStopped
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err),
		errors.As(err, &ne) && ne.Timeout():
		return dropTimeout
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause): // a 403, but no permission is missing
		return dropRejected
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return dropForbidden
	case errors.As(err, &status) && status.Status().Code >= 500:
		return dropServerError
	case errors.As(err, &status) && status.Status().Code >= 400:
		return dropRejected
	}
	return dropUnreachable
}

// eventAction is "Resolve <typed name>" within the API's 128 characters. A longer name (an
// endpoint and a Service of 63 characters each make 135) keeps its start and a hash of the
// whole, so that two long names still read apart.
func eventAction(typed string) string {
	a := "Resolve " + typed
	if len(a) <= maxAction {
		return a
	}
	h := fnv.New32a()
	h.Write([]byte(typed))
	tail := fmt.Sprintf("~%08x", h.Sum32())
	return clip(a, maxAction-len(tail)) + tail
}

// eventName is a name of the Pod's, unique in time, as client-go makes them; a Pod name near
// the 253 characters a name may have is cut, so that the Event's still is one.
func eventName(pod string, at time.Time) string {
	suffix := fmt.Sprintf(".%x", at.UnixNano())
	return strings.TrimRight(clip(pod, maxName-len(suffix)), ".-") + suffix
}

// clip cuts s to at most n bytes of valid UTF-8: the API server counts bytes, and an invalid
// sequence would come back longer as U+FFFD.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// note says what was typed, what answered and what to change, as the log line does.
func (e *eventer) note(it eventItem, typed string) string {
	var s string
	if it.d.kind == apexKind {
		got := "no records (NODATA)"
		if it.d.answer == answerRecords {
			got = "the records of its ExternalName Services"
		}
		f := e.advise(it.d)
		s = fmt.Sprintf("%s %s, what the search list makes of %q, was answered through namespace %s, not a Service: %s. %s. Fix: %s",
			it.qname, dns.Type(it.qtype), typed, f.Name, got, actionNote(it.d.action), f.String())
	} else {
		f := shadowFix(it.d.name)
		s = fmt.Sprintf("%s %s, what the search list makes of %q (%s), was answered by %s. %s. Fix: %s",
			it.qname, dns.Type(it.qtype), typed, f.Meant(), f.Got(), actionNote(it.d.action), f.String())
	}
	if s = strings.ToValidUTF8(s, "?"); len(s) > maxNote {
		s = clip(s, maxNote-3) + "..."
	}
	return s
}

func actionNote(action string) string {
	if action == actionRefused {
		return "nsguard refused the answer, so the lookup went on to the next search domain"
	}
	return "nsguard let the answer through and logged it"
}
