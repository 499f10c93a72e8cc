// Package events records nsguard's Kubernetes Events: on the client Pod of an answer that
// came through a namespace apex or an endpoint name, and on the Namespace a live finding is
// about. One worker per server block writes them at a bounded rate from a bounded queue,
// makes repeats a series, and counts every Event not written by reason. The query path
// hands it plain values and never waits for it.
package events

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/internal/jsonlog"
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
		if jsonlog.On() {
			jsonlog.Warn("Event not recorded", slog.String("reason", reason),
				slog.String("counted_in", "events_dropped_total"), slog.String("error", err.Error()))
			return
		}
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
