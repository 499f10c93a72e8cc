package nsguard

import (
	"context"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/nonwriter"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
)

// NSGuard catches answers that cluster DNS gives through a namespace apex
// (<ns>.svc.<zone>), the name a pod's search list makes of a short name, and
// logs or refuses them. With a view of the cluster it also names the client,
// says what to change, and catches endpoint names that shadow a Service.
type NSGuard struct {
	Next plugin.Handler

	zones           []string // guarded zones; set at start-up when they default
	mode            Mode     // for namespace apex answers
	shadows         Mode     // for endpoint shadows
	rcode           int
	allowNamespaces map[string]struct{}
	allowClients    map[string]struct{}
	limiter         *logLimiter

	view    *view    // nil without a cluster view
	watcher *watcher // keeps view up to date
	events  *eventer // nil unless Events are on
}

// New returns an NSGuard for cfg, without a cluster view.
func New(cfg config) *NSGuard {
	return &NSGuard{
		zones:           cfg.zones,
		mode:            cfg.mode,
		shadows:         cfg.shadows,
		rcode:           cfg.rcode,
		allowNamespaces: cfg.allowNamespaces,
		allowClients:    cfg.allowClients,
		limiter:         newLogLimiter(cfg.logInterval, cfg.logLimit),
	}
}

// Name implements plugin.Handler.
func (g *NSGuard) Name() string { return pluginName }

// Ready implements ready.Readiness: ready once the cluster view, if any, has synced.
func (g *NSGuard) Ready() bool { return g.view == nil || g.view.synced.Load() }

// ServeDNS implements plugin.Handler. Only namespace apex questions and endpoint names that
// shadow a Service are held; everything else goes straight on, with no writer of ours and no
// allocation. It keeps its stack frame small: every plugin after it runs on top of it.
func (g *NSGuard) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if g.holds(ctx, r) {
		return g.hold(ctx, w, r)
	}
	return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
}

// holds reports whether r asks for a name nsguard must see the answer to: a namespace
// apex, or with a view an endpoint name that shadows a Service.
//
//go:noinline
func (g *NSGuard) holds(ctx context.Context, r *dns.Msg) bool {
	if len(r.Question) != 1 || r.Opcode != dns.OpcodeQuery {
		return false
	}
	q := r.Question[0]
	if q.Qclass != dns.ClassINET || q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR {
		return false
	}
	zone := clusterdns.MatchZone(q.Name, g.zones)
	if !g.mayHold(q.Name, zone) {
		return false
	}
	switch n := clusterdns.ClassifyIn(q.Name, zone); n.Shape {
	case clusterdns.NamespaceApex:
		return true
	case clusterdns.EndpointName:
		return g.view != nil && g.viewSynced(ctx) && g.view.shadowed(n)
	}
	return false
}

// mayHold is a quick look that lets most names through without reading them label by label:
// a namespace apex has two labels below the zone, an endpoint name four.
func (g *NSGuard) mayHold(qname, zone string) bool {
	if zone == "" {
		return false
	}
	rest := clusterdns.BelowZone(qname, zone)
	if strings.IndexByte(rest, '\\') >= 0 {
		return true // an escaped dot is not a label's end: let Classify read it
	}
	switch strings.Count(rest, ".") {
	case 2:
		return true
	case 4:
		return g.view != nil
	}
	return false
}

// hold runs the next plugin with a capturing writer, then decides what the client gets.
// Its own frame stays small: the plugins after it run on top of it.
func (g *NSGuard) hold(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	nw := nonwriter.New(w)
	rcode, err := plugin.NextOrFailure(g.Name(), g.Next, ctx, nw, r)
	if nw.Msg == nil {
		return rcode, err // nothing was written; the server answers the rcodes that need it
	}
	return g.answer(ctx, w, r, nw.Msg, rcode, err)
}
