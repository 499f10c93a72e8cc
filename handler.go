package nsguard

import (
	"context"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/nonwriter"

	"github.com/miekg/dns"
	ot "github.com/opentracing/opentracing-go"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/events"
)

// NSGuard catches answers that cluster DNS gives through a namespace apex
// (<ns>.svc.<zone>), the name a pod's search list makes of a short name, and
// logs or refuses them. With a view of the cluster it also names the client,
// says what to change, and catches endpoint names that shadow a Service.
type NSGuard struct {
	Next plugin.Handler

	zones           []string            // guarded zones; set at start-up when they default
	soas            map[string]*dns.SOA // each zone's own SOA, for a refusal when the upstream sent none
	apexDots        uint64              // bit n: a namespace apex under a zone has n dots
	endpointDots    uint64              // bit n: an endpoint name under a zone has n dots
	mode            Mode                // for namespace apex answers
	shadows         Mode                // for endpoint shadows
	rcode           int
	allowNamespaces map[string]struct{}
	allowClients    map[string]struct{}
	limiter         *logLimiter

	view      clusterView    // nil without a cluster view
	events    *events.Worker // nil unless Events are on
	podEvents bool           // 'events': on client Pods; 'namespace_events' alone uses events for Namespaces only
	counters  heldCounters
	traced    bool   // the server block may open trace spans; false once start-up finds no trace plugin
	block     *block // what the server block runs beside the queries; nil before start-up
}

// New returns an NSGuard for cfg, without a cluster view.
func New(cfg config) *NSGuard {
	g := &NSGuard{
		mode:            cfg.mode,
		shadows:         cfg.shadows,
		rcode:           cfg.rcode,
		allowNamespaces: cfg.allowNamespaces,
		allowClients:    cfg.allowClients,
		limiter:         newLogLimiter(cfg.logInterval, cfg.logLimit),
		traced:          true,
		counters:        heldCounters{labels: &namespaceLabels{}},
	}
	g.setZones(cfg.zones)
	return g
}

// setZones sets the guarded zones, their SOAs, and the dot counts of the names held under them.
func (g *NSGuard) setZones(zones []string) {
	g.zones = zones
	g.soas = make(map[string]*dns.SOA, len(zones))
	for _, z := range zones {
		g.soas[z] = zoneSOA(z)
	}
	g.apexDots = dotCounts(zones, 2)
	g.endpointDots = dotCounts(zones, 4)
}

// dotCounts returns as bits how many dots a name of labels labels below each zone has.
func dotCounts(zones []string, labels int) uint64 {
	var bits uint64
	for _, z := range zones {
		n := strings.Count(z, ".")
		if z == "." {
			n = 0 // the root's dot ends the last label below it
		}
		if n+labels < 64 {
			bits |= 1 << (n + labels)
		}
	}
	return bits
}

// Name implements plugin.Handler.
func (g *NSGuard) Name() string { return pluginName }

// Ready implements ready.Readiness: ready once the cluster view, if any, has synced.
func (g *NSGuard) Ready() bool { return g.view == nil || g.view.Synced() }

// ServeDNS implements plugin.Handler. Only namespace apex questions and, with a view,
// endpoint names are held; everything else goes straight on, with no writer of ours and no
// allocation. It keeps its stack frame small: every plugin after it runs on top of it.
func (g *NSGuard) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) == 1 && g.mayHold(r.Question[0].Name) {
		return g.hold(ctx, w, r)
	}
	if g.Next != nil && g.direct(ctx, w) {
		return g.Next.ServeDNS(ctx, w, r)
	}
	return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
}

// direct reports whether nsguard can call the next plugin itself, as plugin.NextOrFailure
// would but without its frame, writer and allocation. That writer only tells a metrics
// recorder it wraps which plugin wrote: so direct is false when w is such a recorder, or when
// a trace span is open for the next plugin's child span.
//
// Each query runs on a goroutine whose stack starts small and grows, copied frame by frame,
// once in the chain: the fewer frames nsguard keeps there, the cheaper that copy.
func (g *NSGuard) direct(ctx context.Context, w dns.ResponseWriter) bool {
	_, recorder := w.(plugin.PluginTracker)
	return !recorder && (!g.traced || ot.SpanFromContext(ctx) == nil)
}

// mayHold is the quick look that lets nearly every name through by counting its dots: a
// namespace apex has two labels below its zone, an endpoint name four. An escaped dot adds to
// the count, but a label that holds an escape is never a Kubernetes name, so such a name is
// never held either.
func (g *NSGuard) mayHold(qname string) bool {
	dots := strings.Count(qname, ".")
	return g.apexDots>>dots&1 != 0 || g.view != nil && g.endpointDots>>dots&1 != 0
}

// holds reports whether r asks for a name nsguard must see the answer to, and reads it: a
// namespace apex, or with a synced view an endpoint name, which may shadow a Service. Its
// frame must not join hold's, which lies under the next plugin.
//
//go:noinline
func (g *NSGuard) holds(ctx context.Context, r *dns.Msg) (clusterdns.Name, bool) {
	if r.Opcode != dns.OpcodeQuery {
		return clusterdns.Name{}, false
	}
	q := r.Question[0]
	if q.Qclass != dns.ClassINET || q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR {
		return clusterdns.Name{}, false
	}
	zone := clusterdns.MatchZone(q.Name, g.zones)
	// Most endpoint-shaped names are search candidates (api.github.com.svc.<zone>) that get
	// NXDOMAIN, and an answer without records shadows nothing: the view is asked only once
	// records came back (decide), so these cost no lookup in the shared caches.
	if n, ok := clusterdns.EndpointIn(q.Name, zone); ok {
		return n, g.view != nil && g.viewSynced(ctx)
	}
	n := clusterdns.ClassifyIn(q.Name, zone)
	return n, n.Shape == clusterdns.NamespaceApex
}

// hold reads the name that passed the quick look. If nsguard holds it, it runs the next
// plugin with a capturing writer, then decides what the client gets. The name is read once,
// here: the plugins after nsguard run on top of this frame only for the names it may hold.
//
//go:noinline
func (g *NSGuard) hold(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	n, ok := g.holds(ctx, r)
	if !ok {
		return g.next(ctx, w, r)
	}
	nw := nonwriter.New(w)
	rcode, err := g.next(ctx, nw, r)
	if nw.Msg == nil {
		return rcode, err // nothing was written; the server answers the rcodes that need it
	}
	return g.answer(ctx, w, r, &n, nw.Msg, rcode, err)
}

// next runs the next plugin into w. Unless w is a metrics recorder or there is a trace span
// to open a child of, nsguard calls the next plugin itself: one allocation and 216 bytes of
// stack less under each answer.
func (g *NSGuard) next(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if g.Next != nil && g.direct(ctx, w) {
		return g.Next.ServeDNS(ctx, w, r)
	}
	return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
}
