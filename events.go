package nsguard

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
)

// Kubernetes Events tell the team that owns a Pod what its lookups ran into, where it
// already looks: kubectl describe pod, kubectl get events.
const (
	reasonApex   = "DNSNameThroughNamespace"
	reasonShadow = "DNSEndpointShadow"
	// eventQueue bounds the events waiting for the API server; past it they are dropped.
	eventQueue = 256
	// maxEventKeys bounds the memory of which Pod and name got an event, like the log limiter's.
	maxEventKeys = 10000
	maxNote      = 1024 // events.k8s.io/v1 refuses a longer note
)

// eventItem is what the query path hands over: values only, so it neither allocates nor
// shares a message that the server may still change.
type eventItem struct {
	server string
	d      decision // d.pod is the client Pod, "namespace/name"
	qname  string
	qtype  uint16
}

// eventKey is one Pod and one name: at most one Event each per interval.
type eventKey struct {
	pod, name string
	kind      kind
}

// eventer records Events on client Pods with client-go's recorder, which aggregates
// repeats into series as Kubernetes does. Its queue is bounded, and the query path never
// waits for it.
type eventer struct {
	g        *NSGuard
	client   kubernetes.Interface
	interval time.Duration
	queue    chan eventItem

	cancel      context.CancelFunc
	broadcaster events.EventBroadcaster
	done        chan struct{}
}

func newEventer(g *NSGuard, client kubernetes.Interface, interval time.Duration) *eventer {
	return &eventer{g: g, client: client, interval: interval, queue: make(chan eventItem, eventQueue)}
}

// offer queues an Event for d, or counts it dropped when the queue is full.
func (e *eventer) offer(server string, r *dns.Msg, d decision) {
	select {
	case e.queue <- eventItem{server: server, d: d, qname: r.Question[0].Name, qtype: r.Question[0].Qtype}:
	default:
		eventDrops.get(serverLabels{server, dropQueueFull}).Inc()
	}
}

func (e *eventer) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	e.broadcaster = events.NewBroadcaster(&events.EventSinkImpl{Interface: e.client.EventsV1()})
	if err := e.broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		return err
	}
	recorder := e.broadcaster.NewRecorder(scheme.Scheme, pluginName)
	go e.run(ctx, recorder)
	return nil
}

// stop ends the worker and the broadcaster; a Corefile reload must not leak them.
func (e *eventer) stop() error {
	if e.cancel == nil {
		return nil
	}
	e.cancel()
	<-e.done
	e.broadcaster.Shutdown()
	return nil
}

func (e *eventer) run(ctx context.Context, recorder events.EventRecorder) {
	defer close(e.done)
	sent := map[eventKey]time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case it := <-e.queue:
			e.record(recorder, sent, it)
		}
	}
}

// record sends one Event, unless this Pod and name had one within the interval, or the
// API server is out of reach: then client-go would only pile the Event up in retries.
func (e *eventer) record(recorder events.EventRecorder, sent map[eventKey]time.Time, it eventItem) {
	typed := typedName(it.d)
	key := eventKey{pod: it.d.pod, name: typed, kind: it.d.kind}
	now := time.Now()
	if last, ok := sent[key]; ok && now.Sub(last) < e.interval {
		return
	}
	if e.g.view.Stale() {
		eventDrops.get(serverLabels{it.server, dropUnreachable}).Inc()
		return
	}
	ns, name, _ := strings.Cut(it.d.pod, "/")
	uid, ok := e.g.view.PodUID(it.d.pod)
	if !ok {
		eventDrops.get(serverLabels{it.server, dropPodGone}).Inc()
		return
	}
	if len(sent) >= maxEventKeys {
		clear(sent)
	}
	sent[key] = now
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	reason := reasonApex
	if it.d.kind == shadowKind {
		reason = reasonShadow
	}
	// The name is in the action, so that client-go's series keep each name apart.
	recorder.Eventf(pod, nil, corev1.EventTypeWarning, reason, "Resolve "+typed, "%s", e.note(it, typed))
}

// note says what was typed, what answered and what to change, as the log line does.
func (e *eventer) note(it eventItem, typed string) string {
	var s string
	if it.d.kind == apexKind {
		got := "no records (NODATA)"
		if it.d.answer == answerRecords {
			got = "the records of its ExternalName Services"
		}
		f := e.g.apexFix(it.d)
		s = fmt.Sprintf("%s %s, what the search list makes of %q, was answered through namespace %s, not a Service: %s. %s. Fix: %s",
			it.qname, dns.Type(it.qtype), typed, f.Name, got, actionNote(it.d.action), f.String())
	} else {
		f := shadowFix(it.d.name)
		s = fmt.Sprintf("%s %s, what the search list makes of %q (%s), was answered by %s. %s. Fix: %s",
			it.qname, dns.Type(it.qtype), typed, f.Meant(), f.Got(), actionNote(it.d.action), f.String())
	}
	if len(s) > maxNote {
		s = s[:maxNote-3] + "..."
	}
	return s
}

func actionNote(action string) string {
	if action == actionRefused {
		return "nsguard refused the answer, so the lookup went on to the next search domain"
	}
	return "nsguard let the answer through and logged it"
}
