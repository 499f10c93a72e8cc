package nsguard

import (
	"context"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/nonwriter"

	"github.com/miekg/dns"
)

// NSGuard catches answers that cluster DNS gives through a namespace apex
// (<ns>.svc.<zone>), the name a pod's search list makes of a short name, and
// logs or refuses them.
type NSGuard struct {
	Next plugin.Handler

	zones           []string
	mode            Mode
	rcode           int
	allowNamespaces map[string]struct{}
	limiter         *logLimiter
}

// New returns an NSGuard for cfg.
func New(cfg config) *NSGuard {
	return &NSGuard{
		zones:           cfg.zones,
		mode:            cfg.mode,
		rcode:           cfg.rcode,
		allowNamespaces: cfg.allowNamespaces,
		limiter:         newLogLimiter(cfg.logInterval, cfg.logLimit),
	}
}

// Name implements plugin.Handler.
func (g *NSGuard) Name() string { return pluginName }

// ServeDNS implements plugin.Handler. Only namespace apex questions are held;
// everything else goes straight on, with no writer of ours and no allocation.
func (g *NSGuard) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if len(r.Question) != 1 || r.Opcode != dns.OpcodeQuery {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	q := r.Question[0]
	if q.Qclass != dns.ClassINET || q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	n := Classify(q.Name, g.zones)
	if n.Shape != NamespaceApex {
		return plugin.NextOrFailure(g.Name(), g.Next, ctx, w, r)
	}
	return g.serveNamespaceApex(ctx, w, r, n)
}

func (g *NSGuard) serveNamespaceApex(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, n Name) (int, error) {
	nw := nonwriter.New(w)
	rcode, err := plugin.NextOrFailure(g.Name(), g.Next, ctx, nw, r)
	res := nw.Msg
	if res == nil {
		return rcode, err // nothing was written; the server answers the rcodes that need it
	}
	// Only a NOERROR answer resolved through the namespace. A truncated one comes back over TCP.
	if err != nil || res.Rcode != dns.RcodeSuccess || res.Truncated {
		w.WriteMsg(res)
		return rcode, err
	}

	answer := answerNoData
	if len(res.Answer) > 0 {
		answer = answerRecords
	}
	action := actionLogged
	switch {
	case g.allowed(n.Namespace):
		action = actionAllowed
	case g.mode == ModeRefuse:
		action = actionRefused
	}
	server := metrics.WithServer(ctx)
	apexCounters.get(apexLabels{server, n.Zone, metrics.WithView(ctx), answer, action}).Inc()

	switch action {
	case actionAllowed:
		w.WriteMsg(res)
		return rcode, err
	case actionLogged:
		w.WriteMsg(res)
	case actionRefused:
		w.WriteMsg(refusal(r, res, g.rcode, n.Zone))
		rcode, err = dns.RcodeSuccess, nil // written: tell the server not to answer again
		if plugin.ClientWrite(g.rcode) {
			rcode = g.rcode
		}
	}
	g.report(server, w, r, n, res, answer, action)
	return rcode, err
}

// allowed reports whether ns is under "allow namespace". ns keeps the client's case.
func (g *NSGuard) allowed(ns string) bool {
	if len(g.allowNamespaces) == 0 {
		return false
	}
	var buf [63]byte // a namespace label is at most 63 octets
	for i := 0; i < len(ns); i++ {
		buf[i] = lowerASCII(ns[i])
	}
	_, ok := g.allowNamespaces[string(buf[:len(ns)])]
	return ok
}
