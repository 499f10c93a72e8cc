package nsguard

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"

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

	// findings counts the findings of nsguard audit's checks that hold in the cluster now.
	findings = promauto.NewGaugeVec(prometheus.GaugeOpts{
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

	dropQueueFull   = "queue_full"
	dropStopped     = "stopped"
	dropPodGone     = "pod_gone"
	dropUnreachable = "unreachable"
	dropTimeout     = "timeout"
	dropForbidden   = "forbidden"
	dropRejected    = "rejected"
	dropServerError = "server_error"

	clientUnknown = "unknown" // no view, or an address no single live Pod holds
	clientOther   = "other"   // past maxClientNamespaces
)

// counterCache keeps the counters of a vector by their label values, so the query path
// reads a map instead of hashing and validating labels on every answer. The set of
// label values is small and fixed by the configuration, so the map is copied on write.
type counterCache[K comparable] struct {
	create func(K) prometheus.Counter
	mu     sync.Mutex
	m      atomic.Pointer[map[K]prometheus.Counter]
}

func (c *counterCache[K]) get(k K) prometheus.Counter {
	if m := c.m.Load(); m != nil {
		if ctr, ok := (*m)[k]; ok {
			return ctr
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil {
		if ctr, ok := (*old)[k]; ok {
			return ctr
		}
	}
	m := make(map[K]prometheus.Counter)
	if old != nil {
		maps.Copy(m, *old)
	}
	ctr := c.create(k)
	m[k] = ctr
	c.m.Store(&m)
	return ctr
}

type apexLabels struct{ server, zone, view, answer, action, clientNS string }

type serverLabels struct{ server, reason string }

type shadowLabels struct{ server, zone, view, action, clientNS string }

var (
	apexCounters = &counterCache[apexLabels]{create: func(l apexLabels) prometheus.Counter {
		return namespaceApexAnswers.WithLabelValues(l.server, l.zone, l.view, l.answer, l.action, l.clientNS)
	}}
	suppressedCounters = &counterCache[serverLabels]{create: func(l serverLabels) prometheus.Counter {
		return logLinesSuppressed.WithLabelValues(l.server, l.reason)
	}}
	shadowCounters = &counterCache[shadowLabels]{create: func(l shadowLabels) prometheus.Counter {
		return endpointShadows.WithLabelValues(l.server, l.zone, l.view, l.action, l.clientNS)
	}}
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

// maxClientNamespaces bounds the client_namespace label: the first this many namespaces a
// server sees get their own series, later ones share "other". Namespaces are made by the
// cluster's admins, not chosen by clients, and only offenders make series; still, a cluster
// of thousands of namespaces must not make thousands of series.
const maxClientNamespaces = 100

// clientNamespaces is the set of client_namespace values each server has given out.
var clientNamespaces = &namespaceLabels{}

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
