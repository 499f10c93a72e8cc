package nsguard

import (
	"context"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
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

	zones           []string
	mode            Mode
	rcode           int
	allowNamespaces map[string]struct{}
	allowClients    map[string]struct{}
	limiter         *logLimiter

	view    *view    // nil without a cluster view
	watcher *watcher // keeps view up to date
}

// New returns an NSGuard for cfg, without a cluster view.
func New(cfg config) *NSGuard {
	return &NSGuard{
		zones:           cfg.zones,
		mode:            cfg.mode,
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
// allocation.
func (g *NSGuard) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 || r.Opcode != dns.OpcodeQuery {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	q := r.Question[0]
	if q.Qclass != dns.ClassINET || q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	zone := clusterdns.MatchZone(q.Name, g.zones)
	if !g.mayHold(q.Name, zone) {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	switch n := clusterdns.ClassifyIn(q.Name, zone); {
	case n.Shape == clusterdns.NamespaceApex:
		return g.hold(ctx, w, r, n, apexLine)
	case n.Shape == clusterdns.EndpointName && g.view != nil:
		if g.viewUsable(ctx) && g.view.shadowed(n) {
			return g.hold(ctx, w, r, n, shadowLine)
		}
	}
	return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
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

// hold runs the next plugin with a capturing writer. When the answer came through what kind
// names (a namespace apex, or an endpoint that shadows a Service), it counts it, writes it or
// the refusal, and logs it; any other answer goes out untouched.
func (g *NSGuard) hold(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, n clusterdns.Name, kind string) (int, error) {
	nw := nonwriter.New(w)
	rcode, err := plugin.NextOrFailure(g.Name(), g.Next, ctx, nw, r)
	res := nw.Msg
	if res == nil {
		return rcode, err // nothing was written; the server answers the rcodes that need it
	}
	// Only a NOERROR answer came through; a truncated one comes back over TCP, and an
	// endpoint name that gave no records shadows nothing.
	if err != nil || res.Rcode != dns.RcodeSuccess || res.Truncated || kind == shadowLine && len(res.Answer) == 0 {
		w.WriteMsg(res)
		return rcode, err
	}

	ip := remoteIP(w)
	var pod string
	if g.view != nil && (kind == shadowLine || g.viewUsable(ctx)) { // ServeDNS checked the view for a shadow
		pod = g.clientPod(ip)
	}
	action := actionLogged
	switch {
	case kind == apexLine && g.allowed(n.Namespace), g.clientAllowed(pod):
		action = actionAllowed
	case g.mode == ModeRefuse:
		action = actionRefused
	}
	server, view := metrics.WithServer(ctx), metrics.WithView(ctx)
	if kind == apexLine {
		answer := answerNoData
		if len(res.Answer) > 0 {
			answer = answerRecords
		}
		apexCounters.get(apexLabels{server, n.Zone, view, answer, action}).Inc()
	} else {
		shadowCounters.get(shadowLabels{server, n.Zone, view, action}).Inc()
	}
	if action == actionAllowed {
		w.WriteMsg(res)
		return rcode, err
	}
	rcode, err = g.respond(w, r, res, n.Zone, action, rcode, err)
	g.report(server, ip, r, n, res, action, pod, kind)
	return rcode, err
}

// respond writes res, or in its place the refusal, and returns what ServeDNS should.
func (g *NSGuard) respond(w dns.ResponseWriter, r, res *dns.Msg, zone, action string, rcode int, err error) (int, error) {
	if action != actionRefused {
		w.WriteMsg(res)
		return rcode, err
	}
	w.WriteMsg(refusal(r, res, g.rcode, zone))
	if plugin.ClientWrite(g.rcode) {
		return g.rcode, nil
	}
	return dns.RcodeSuccess, nil // written: tell the server not to answer again
}

// viewUsable reports whether the cluster view can be used now, and counts it when not.
func (g *NSGuard) viewUsable(ctx context.Context) bool {
	switch {
	case !g.view.synced.Load():
		skipCounters.get(suppressedLabels{metrics.WithServer(ctx), skipNotSynced}).Inc()
	case g.view.stale.Load():
		skipCounters.get(suppressedLabels{metrics.WithServer(ctx), skipUnreachable}).Inc()
	default:
		return true
	}
	return false
}

// allowed reports whether ns is under "allow namespace". ns keeps the client's case.
func (g *NSGuard) allowed(ns string) bool {
	if len(g.allowNamespaces) == 0 {
		return false
	}
	var buf [63]byte // a namespace label is at most 63 octets
	_, ok := g.allowNamespaces[string(lowerKey(buf[:0], "", ns))]
	return ok
}
