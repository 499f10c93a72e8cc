package nsguard

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Label values are all chosen by the operator or by nsguard, never by a client.
var (
	// namespaceApexAnswers counts NOERROR answers to <ns>.svc.<zone> names.
	namespaceApexAnswers = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "namespace_apex_answers_total",
		Help:      "Counter of NOERROR answers to namespace apex names (<namespace>.svc.<zone>), by answer kind (records or nodata), action (logged, refused or allowed) and the namespace of the client Pod.",
	}, []string{"server", "zone", "view", "answer", "action", "client_namespace"})

	// logLinesSuppressed counts log lines held back by the log limits.
	logLinesSuppressed = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "log_lines_suppressed_total",
		Help:      "Counter of log lines suppressed, by reason: repeat (the same client and question within log_interval) or limit (over log_limit lines per second).",
	}, []string{"server", "reason"})

	// endpointShadows counts answers where an endpoint name took the place of a Service in another namespace.
	endpointShadows = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "endpoint_shadows_total",
		Help:      "Counter of answers to <endpoint>.<service>.<namespace>.svc.<zone> names whose first two labels also name a Service in another namespace, by action (logged, refused or allowed) and the namespace of the client Pod.",
	}, []string{"server", "zone", "view", "action", "client_namespace"})

	// viewSkips counts the times the cluster view could not be used on the query path.
	viewSkips = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "view_skips_total",
		Help:      "Counter of client, advice and endpoint shadow checks skipped because the cluster view had not synced yet (reason not_synced).",
	}, []string{"server", "reason"})

	// viewStaleDecisions counts held answers decided with a view cut off from the API server.
	viewStaleDecisions = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "view_stale_decisions_total",
		Help:      "Counter of held answers decided with the cluster view's last known state, while it was cut off from the API server.",
	}, []string{"server"})

	// eventsDropped counts Kubernetes Events nsguard did not send.
	eventsDropped = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "events_dropped_total",
		Help:      "Counter of Kubernetes Events not recorded, by reason: queue_full (more were waiting for the write rate than the queue holds), stopped (still waiting at a reload or stop), pod_gone (the client Pod was deleted), unreachable (the API server was out of reach), timeout (a write took too long), forbidden (401 or 403: no permission to write Events), rejected (another 4xx: the API server refused the Event) or server_error (a 5xx).",
	}, []string{"server", "reason"})

	// findingsHeld counts the findings of nsguard audit's checks that hold in the cluster now.
	findingsHeld = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "findings",
		Help:      "Findings of nsguard audit's checks that hold in the cluster now, as the cluster view sees it, by check (namespace-captures-service, namespace-apex-answers, reserved-namespace, alias-through-namespace, alias-dangling, alias-loop) and severity (error, warning, info).",
	}, []string{"server", "check", "severity"})

	// viewSynced is 1 once the cluster view has synced.
	viewSynced = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "view_synced",
		Help:      "1 once nsguard's cluster view has synced with the API server, 0 before.",
	}, []string{"server"})

	// viewStale is 1 while the view is cut off from the API server.
	viewStale = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: pluginName,
		Name:      "view_stale",
		Help:      "1 while nsguard's cluster view is cut off from the API server and answers from its last known state, 0 otherwise.",
	}, []string{"server"})
)

// Values of the answer, action and reason labels.
const (
	answerRecords = "records"
	answerNoData  = "nodata"

	actionLogged  = "logged"
	actionRefused = "refused"
	actionAllowed = "allowed"

	reasonRepeat = "repeat"
	reasonLimit  = "limit"

	skipNotSynced = "not_synced"

	clientUnknown = "unknown" // no view, or an address no single live Pod holds
	clientOther   = "other"   // past maxClientNamespaces
)

// readMostly is a map the query path reads without a lock. Its keys are few and fixed by
// the configuration and the cluster, so it is copied on write.
type readMostly[K comparable, V any] struct {
	mu sync.Mutex
	m  atomic.Pointer[map[K]V]
}

// get returns the value of k, made by create the first time.
func (c *readMostly[K, V]) get(k K, create func(K) V) V {
	if m := c.m.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if v, ok := (*old)[k]; ok {
			return v
		}
	}
	m := make(map[K]V)
	if old != nil {
		maps.Copy(m, *old)
	}
	v := create(k)
	m[k] = v
	c.m.Store(&m)
	return v
}

// counterCache keeps the counters of a vector by their label values, so the query path
// reads a map instead of hashing and validating labels on every answer.
type counterCache[K comparable] struct {
	create func(K) prometheus.Counter
	m      readMostly[K, prometheus.Counter]
}

func (c *counterCache[K]) get(k K) prometheus.Counter { return c.m.get(k, c.create) }

type serverLabels struct{ server, reason string }

var (
	skipCounters = &counterCache[serverLabels]{create: func(l serverLabels) prometheus.Counter {
		return viewSkips.WithLabelValues(l.server, l.reason)
	}}
	staleCounters = &counterCache[string]{create: func(server string) prometheus.Counter {
		return viewStaleDecisions.WithLabelValues(server)
	}}
	eventDrops = &counterCache[serverLabels]{create: func(l serverLabels) prometheus.Counter {
		return eventsDropped.WithLabelValues(l.server, l.reason)
	}}
)

// heldCounters are the counters one NSGuard's held answers add to. Every held answer adds to
// one or two, so they are found by a single lookup, without hashing six label values: by
// the query's server (a pointer in its context), view, zone and client namespace, then by
// position. Each series is still made when it is first counted, as WithLabelValues would
// make it.
type heldCounters struct {
	clients readMostly[clientKey, *clientCounters]
	labels  *namespaceLabels // of the server block: a reload hands them over
}

type clientKey struct {
	srv                   any // the context's dnsserver.Key value: the *dnsserver.Server, or nil
	view, zone, namespace string
}

// clientCounters are the counters of one server, view, zone and client namespace. The
// suppressed lines' series is the server's: every clientCounters of a server counts into it.
type clientCounters struct {
	server, view, zone, clientNS string            // label values
	apex                         [2][3]lazyCounter // by answer (records, nodata) and action (logged, refused, allowed)
	shadow                       [3]lazyCounter    // by action
	suppressed                   [2]lazyCounter    // by reason: repeat, limit
	mu                           sync.Mutex        // held while a series is made
}

// lazyCounter is one series, made when first counted. It sits in place in its
// clientCounters: a held answer reads it in the lines it reads anyway, with no pointer to
// follow before the series itself.
type lazyCounter struct {
	made atomic.Bool
	c    prometheus.Counter // set once, before made
}

// add counts one on the series if it is made; else it reports false, for the caller to make it.
func (l *lazyCounter) add() bool {
	if l.made.Load() {
		l.c.Inc()
		return true
	}
	return false
}

// make sets the series of l, unless an answer on another CPU made it first, and counts one.
func (cc *clientCounters) make(l *lazyCounter, vec *prometheus.CounterVec, labels ...string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !l.made.Load() {
		l.c = vec.WithLabelValues(labels...)
		l.made.Store(true)
	}
	l.c.Inc()
}

// forClient returns the counters of the query's server and view, of zone, and of the client
// Pod's namespace ns ("" unknown).
func (h *heldCounters) forClient(ctx context.Context, zone, ns string) *clientCounters {
	k := clientKey{ctx.Value(dnsserver.Key{}), metrics.WithView(ctx), zone, ns}
	return h.clients.get(k, func(k clientKey) *clientCounters {
		server := metrics.WithServer(ctx)
		return &clientCounters{server: server, view: k.view, zone: k.zone, clientNS: h.labels.value(server, k.namespace)}
	})
}

// suppressedLine counts a log line the limits held back.
func (cc *clientCounters) suppressedLine(reason string) {
	l := &cc.suppressed[0]
	if reason == reasonLimit {
		l = &cc.suppressed[1]
	}
	if !l.add() {
		cc.make(l, logLinesSuppressed, cc.server, reason)
	}
}

func (cc *clientCounters) countApex(answer, action string) {
	if l := &cc.apex[answerIndex(answer)][actionIndex(action)]; !l.add() {
		cc.make(l, namespaceApexAnswers, cc.server, cc.zone, cc.view, answer, action, cc.clientNS)
	}
}

func (cc *clientCounters) countShadow(action string) {
	if l := &cc.shadow[actionIndex(action)]; !l.add() {
		cc.make(l, endpointShadows, cc.server, cc.zone, cc.view, action, cc.clientNS)
	}
}

func answerIndex(answer string) int {
	if answer == answerRecords {
		return 0
	}
	return 1
}

func actionIndex(action string) int {
	switch action {
	case actionLogged:
		return 0
	case actionRefused:
		return 1
	}
	return 2
}

// maxClientNamespaces bounds the client_namespace label: the first this many namespaces a
// server sees get their own series, later ones share "other". Namespaces are made by the
// cluster's admins, not chosen by clients, and only offenders make series; still, a cluster
// of thousands of namespaces must not make thousands of series.
const maxClientNamespaces = 100

// namespaceLabels is the set of client_namespace values each server of a block has given
// out; the block keeps it across reloads, so that the same namespaces keep their series.
type namespaceLabels struct {
	mu   sync.Mutex
	seen atomic.Pointer[map[nsLabel]struct{}] // copied on write; read without a lock
	per  map[string]int                       // server → namespaces seen
}

type nsLabel struct{ server, ns string }

// value is the client_namespace label of a client Pod's namespace ns ("" when unknown).
func (n *namespaceLabels) value(server, ns string) string {
	if ns == "" {
		return clientUnknown
	}
	if m := n.seen.Load(); m != nil {
		if _, ok := (*m)[nsLabel{server, ns}]; ok {
			return ns
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.seen.Load()
	if old != nil {
		if _, ok := (*old)[nsLabel{server, ns}]; ok {
			return ns
		}
	}
	if n.per == nil {
		n.per = map[string]int{}
	}
	if n.per[server] >= maxClientNamespaces {
		return clientOther
	}
	m := make(map[nsLabel]struct{})
	if old != nil {
		maps.Copy(m, *old)
	}
	m[nsLabel{server, ns}] = struct{}{}
	n.per[server]++
	n.seen.Store(&m)
	return ns
}
