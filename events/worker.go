// Package events records nsguard's Kubernetes Events: on the client Pod of an answer that
// came through a namespace apex or an endpoint name, and on the Namespace a live finding is
// about. One worker per server block writes them at a bounded rate from a bounded queue,
// makes repeats a series, and counts every Event not written by reason. The query path
// hands it plain values and never waits for it.
package events

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
	"sync/atomic"
	"time"
	"unicode/utf8"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/nsguard/nsguard/clusterdns"
)

const controller = "nsguard" // reportingController, and the plugin the log lines are of

var log = clog.NewWithPlugin(controller)

// Kubernetes Events tell the team that owns a Pod what its lookups ran into, where it
// already looks: kubectl describe pod, kubectl get events.
const (
	reasonApex   = "DNSNameThroughNamespace"
	reasonShadow = "DNSEndpointShadow"

	// rate and burst are what one replica writes to the API server: 10 Events at once, then
	// 2 a second. That stays under client-go's default 5 requests a second, which the
	// informers share, and is a small part of a busy API server's writes.
	rate  = 2
	burst = 10
	// queueLen bounds the Events waiting for the rate, in count and so in memory (an item is
	// a few strings of one question): at most 32 s of writes. Past it they are dropped.
	queueLen = 64
	// writeTimeout bounds one write, client-go's retries included.
	writeTimeout = 10 * time.Second
	// maxKeys bounds the memory of which Pod and name got an Event, like the log limiter's.
	maxKeys = 10000
	// retryAfter is how long a Pod and name whose write failed waits before the next write is
	// tried, doubling with each failure up to the interval; offers meanwhile are counted
	// with the failure's reason. client-go's own Event recorder waits 10 s between tries.
	retryAfter = 10 * time.Second
	// dropLogEvery is how often the log tells of Events dropped for one reason.
	dropLogEvery = time.Minute

	// Limits of events.k8s.io/v1, past which the API server refuses an Event.
	maxAction   = 128
	maxNote     = 1024
	maxInstance = 128 // reportingInstance
	maxName     = 253 // metadata.name, a DNS subdomain
)

// The reasons an Event is not written, as coredns_nsguard_events_dropped_total counts them.
const (
	DropQueueFull   = "queue_full"
	DropStopped     = "stopped"
	DropPodGone     = "pod_gone"
	DropUnreachable = "unreachable"
	DropTimeout     = "timeout"
	DropForbidden   = "forbidden"
	DropRejected    = "rejected"
	DropServerError = "server_error"
)

// Kind is what an Event on a client Pod is about.
type Kind uint8

const (
	Apex    Kind = iota // an answer that came through a namespace apex
	Shadow              // an endpoint name that answered in place of a Service
	finding             // not an answer: a live finding, on its Namespace
)

// Offer is one held answer as the query path hands it over: values only, so that it neither
// allocates nor shares a message that the server may still change.
type Offer struct {
	Server  string          // the server label of the query
	Pod     string          // "namespace/name" of the client Pod
	Kind    Kind            // Apex or Shadow
	Name    clusterdns.Name // the question's name, as read
	QName   string
	QType   uint16
	Records bool // the answer held records (else it was NODATA)
	Refused bool // nsguard refused it
}

// NamespaceFinding is a live finding whose first object is a Namespace: its Event goes on
// that Namespace, so that the Namespace's Events say what it captures.
type NamespaceFinding struct {
	Namespace, Check, Severity, Message, Fix string
}

// findingReasons are the Events' reasons of the live checks about a Namespace.
var findingReasons = map[string]string{
	"namespace-captures-service": "DNSNamespaceCapturesService",
	"namespace-apex-answers":     "DNSNamespaceApexAnswers",
	"reserved-namespace":         "DNSReservedNamespace",
}

// View is what Events need of the cluster view.
type View interface {
	Stale() bool                      // cut off from the API server
	PodUID(pod string) (string, bool) // "namespace/name" → UID, when known
}

// Config is what a worker writes with.
type Config struct {
	Client   kubernetes.Interface
	View     View
	Interval time.Duration // one Event per Pod and name (or Namespace and check) in this long
	// Advise is what to change for a client that typed an apex name: the fix of its line.
	Advise func(Offer) clusterdns.ApexFix
	// Dropped counts an Event not written, under the server it was offered for.
	Dropped func(server, reason string)
	Logger  *klog.Logger // client-go's messages about the writes
}

// item is what waits in the queue: an answer's offer, or a finding.
type item struct {
	offer   Offer
	finding *NamespaceFinding // instead, a live finding about a Namespace
	server  string            // of the finding
}

// key is one Pod and one name: at most one Event each per interval.
type key struct {
	pod, name string
	kind      Kind
}

// sent is the Event of one key: when it was last written, its series so far, and the
// failure that holds back its next write, if any.
type sent struct {
	at      time.Time
	name    string // the Event's metadata.name; "" until one was created
	count   int32  // occurrences in its series
	failed  string // the drop reason of the last write, "" when it was written
	retry   time.Time
	backoff time.Duration
}

// rateWaiter is the write rate: Wait returns when the next write may go.
type rateWaiter interface {
	Wait(ctx context.Context) error
}

// Worker writes Events, one at a time at the rate: what waits is bounded by its queue, and
// every Event not written is counted by reason. Repeats of a Pod and name after the interval
// make its Event a series, as Kubernetes does. The query path never waits for it.
//
// client-go's tools/events recorder makes series too, but it writes each Event on a goroutine
// of its own, retries and gives up without telling its caller, and drops silently when its
// queue is full: an Event it does not write could not be counted by reason. It has no rate
// limit either. So the worker writes with the typed client itself.
type Worker struct {
	cfg      Config
	advise   atomic.Pointer[func(Offer) clusterdns.ApexFix]
	queue    chan item
	limit    rateWaiter
	instance string
	now      func() time.Time

	mu     sync.RWMutex // offers hold it shared, so that Stop knows none is half done
	closed bool         // stopped: an offer is counted, not queued
	cancel context.CancelFunc
	done   chan struct{}

	// The worker's own.
	sent   map[key]*sent
	logged map[string]time.Time // drop reason → when the log last told of it
}

// New returns a worker that writes with cfg once started.
func New(cfg Config) *Worker {
	host, _ := os.Hostname()
	w := &Worker{
		cfg:      cfg,
		queue:    make(chan item, queueLen),
		limit:    flowcontrol.NewTokenBucketRateLimiter(rate, burst),
		instance: clip(controller+"-"+host, maxInstance),
		now:      time.Now,
		sent:     map[key]*sent{},
		logged:   map[string]time.Time{},
	}
	w.SetAdvise(cfg.Advise)
	return w
}

// SetAdvise makes f what to change for an apex name from now on: a reload's instance hands
// its own.
func (w *Worker) SetAdvise(f func(Offer) clusterdns.ApexFix) {
	if f != nil {
		w.advise.Store(&f)
	}
}

// Offer queues an Event for an answer, or counts it dropped when the queue is full or the
// worker stopped.
func (w *Worker) Offer(o Offer) {
	w.enqueue(item{offer: o}, o.Server)
}

// OfferFinding queues an Event on the Namespace a live finding is about.
func (w *Worker) OfferFinding(server string, f NamespaceFinding) {
	w.enqueue(item{finding: &f, server: server}, server)
}

func (w *Worker) enqueue(it item, server string) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		w.drop(server, DropStopped, nil)
		return
	}
	select {
	case w.queue <- it:
	default:
		w.drop(server, DropQueueFull, nil)
	}
}

// Start runs the worker.
func (w *Worker) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	if w.cfg.Logger != nil {
		ctx = klog.NewContext(ctx, *w.cfg.Logger)
	}
	w.cancel, w.done = cancel, make(chan struct{})
	go w.run(ctx)
}

// Stop ends the worker, and counts what was still waiting: a reload must neither leak the
// worker nor lose Events uncounted.
func (w *Worker) Stop() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	if w.cancel != nil {
		w.cancel()
		<-w.done
	}
	for {
		select {
		case it := <-w.queue:
			w.drop(it.serverOf(), DropStopped, nil)
		default:
			return
		}
	}
}

func (it item) serverOf() string {
	if it.finding != nil {
		return it.server
	}
	return it.offer.Server
}

func (w *Worker) run(ctx context.Context) {
	defer close(w.done)
	for {
		select {
		case <-ctx.Done():
			return
		case it := <-w.queue:
			w.record(ctx, it)
		}
	}
}

// record writes one Event, unless this Pod and name had one within the interval, or the API
// server is out of reach: a write then would only wait and fail. After a failed write, the
// key's offers are counted with its reason until its back-off ends, and then written again.
func (w *Worker) record(ctx context.Context, it item) {
	server := it.serverOf()
	k := key{pod: it.offer.Pod, name: typedName(it.offer), kind: it.offer.Kind}
	if it.finding != nil {
		k = key{pod: "Namespace " + it.finding.Namespace, name: it.finding.Check, kind: finding}
	}
	now := w.now()
	s := w.sent[k]
	switch {
	case s == nil:
	case s.failed != "" && now.Before(s.retry):
		w.drop(server, s.failed, nil)
		return
	case s.failed == "" && now.Sub(s.at) < w.cfg.Interval:
		return // the next write after the interval adds to its series
	}
	if w.cfg.View.Stale() {
		w.drop(server, DropUnreachable, nil)
		return
	}
	var ev eventFor
	if it.finding != nil {
		ev = namespaceEvent(it.finding)
	} else {
		uid, ok := w.cfg.View.PodUID(it.offer.Pod)
		if !ok {
			w.drop(server, DropPodGone, nil)
			return
		}
		ev = w.podEvent(it.offer, k.name, uid)
	}
	if err := w.limit.Wait(ctx); err != nil {
		w.drop(server, DropStopped, nil)
		return
	}
	if s == nil {
		if len(w.sent) >= maxKeys {
			clear(w.sent) // can only make a new Event where a series would have grown
		}
		s = &sent{}
		w.sent[k] = s
	}
	at := w.now()
	if err := w.write(ctx, s, at, ev); err != nil {
		reason := dropReason(err)
		s.backoff = min(max(2*s.backoff, retryAfter), max(w.cfg.Interval, retryAfter))
		s.failed, s.retry = reason, at.Add(s.backoff)
		w.drop(server, reason, err)
		return
	}
	s.at, s.failed, s.backoff = at, "", 0
}

// eventFor is what one Event says, and of what.
type eventFor struct {
	namespace            string
	regarding            corev1.ObjectReference // UID empty: looked up when written
	reason, action, note string
}

func (w *Worker) podEvent(o Offer, typed, uid string) eventFor {
	ns, pod, _ := strings.Cut(o.Pod, "/")
	reason := reasonApex
	if o.Kind == Shadow {
		reason = reasonShadow
	}
	return eventFor{
		namespace: ns,
		regarding: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: pod, UID: types.UID(uid)},
		reason:    reason, action: eventAction(typed), note: w.note(o, typed),
	}
}

// namespaceEvent is the Event of a live finding, on the Namespace it is about. A Namespace
// is cluster-scoped, and the API server keeps the Events of such objects in namespace
// default. The view keeps no Namespace's UID, which ties an Event to its object: write
// reads it.
func namespaceEvent(f *NamespaceFinding) eventFor {
	note := strings.ToValidUTF8(f.Severity+": "+f.Message+". Fix: "+f.Fix, "?")
	if len(note) > maxNote {
		note = clip(note, maxNote-3) + "..."
	}
	return eventFor{
		namespace: metav1.NamespaceDefault,
		regarding: corev1.ObjectReference{Kind: "Namespace", APIVersion: "v1", Name: f.Namespace},
		reason:    findingReasons[f.Check], action: clip("Audit "+f.Check, maxAction), note: note,
	}
}

// write adds to the key's series, or creates its Event when it has none the API server keeps.
func (w *Worker) write(ctx context.Context, s *sent, at time.Time, ev eventFor) error {
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	events := w.cfg.Client.EventsV1().Events(ev.namespace)
	now := metav1.NewMicroTime(at)
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
		n, err := w.cfg.Client.CoreV1().Namespaces().Get(ctx, ev.regarding.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ev.regarding.UID = n.UID
	}
	made, err := events.Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: eventName(ev.regarding.Name, at), Namespace: ev.namespace},
		EventTime:           now,
		Regarding:           ev.regarding,
		Type:                corev1.EventTypeWarning,
		Reason:              ev.reason,
		Action:              ev.action,
		Note:                ev.note,
		ReportingController: controller,
		ReportingInstance:   w.instance,
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	s.name, s.count = made.Name, 1
	return nil
}

// drop counts an Event not written, and tells the log once a minute per reason, so that a
// missing permission shows where an operator looks. Only the worker's goroutine passes an
// error.
func (w *Worker) drop(server, reason string, err error) {
	if w.cfg.Dropped != nil {
		w.cfg.Dropped(server, reason)
	}
	if err == nil {
		return
	}
	if now := w.now(); now.Sub(w.logged[reason]) >= dropLogEvery {
		w.logged[reason] = now
		log.Warningf("Event not recorded (%s, counted in events_dropped_total): %v", reason, err)
	}
}

// dropReason is the events_dropped_total reason of a failed write.
func dropReason(err error) string {
	var ne net.Error
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, context.Canceled): // only Stop cancels
		return DropStopped
	case errors.Is(err, context.DeadlineExceeded), apierrors.IsTimeout(err), apierrors.IsServerTimeout(err),
		errors.As(err, &ne) && ne.Timeout():
		return DropTimeout
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause): // a 403, but no permission is missing
		return DropRejected
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return DropForbidden
	case errors.As(err, &status) && status.Status().Code >= 500:
		return DropServerError
	case errors.As(err, &status) && status.Status().Code >= 400:
		return DropRejected
	}
	return DropUnreachable
}

// typedName is what the client most likely typed: a namespace's name, or <endpoint>.<service>.
func typedName(o Offer) string {
	if o.Kind == Shadow {
		return o.Name.ShadowFix().Typed()
	}
	return strings.ToLower(o.Name.Namespace)
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
func (w *Worker) note(o Offer, typed string) string {
	var s string
	if o.Kind == Apex {
		got := "no records (NODATA)"
		if o.Records {
			got = "the records of its ExternalName Services"
		}
		f := clusterdns.ApexFix{Name: typed, Zone: o.Name.Zone}
		if advise := w.advise.Load(); advise != nil {
			f = (*advise)(o)
		}
		s = fmt.Sprintf("%s %s, what the search list makes of %q, was answered through namespace %s, not a Service: %s. %s. Fix: %s",
			o.QName, dns.Type(o.QType), typed, f.Name, got, actionNote(o.Refused), f.String())
	} else {
		f := o.Name.ShadowFix()
		s = fmt.Sprintf("%s %s, what the search list makes of %q (%s), was answered by %s. %s. Fix: %s",
			o.QName, dns.Type(o.QType), typed, f.Meant(), f.Got(), actionNote(o.Refused), f.String())
	}
	if s = strings.ToValidUTF8(s, "?"); len(s) > maxNote {
		s = clip(s, maxNote-3) + "..."
	}
	return s
}

func actionNote(refused bool) string {
	if refused {
		return "nsguard refused the answer, so the lookup went on to the next search domain"
	}
	return "nsguard let the answer through and logged it"
}
