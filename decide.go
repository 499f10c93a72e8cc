package nsguard

import (
	"context"
	"net/netip"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/events"
)

// kind is why nsguard holds an answer.
type kind uint8

const (
	apexKind   kind = iota // it came through a namespace apex
	shadowKind             // an endpoint name answered in place of a Service
)

// decision is what nsguard does with one held answer: made once, then acted on once.
type decision struct {
	kind   kind
	name   clusterdns.Name
	client netip.Addr
	pod    string // "namespace/name" of the Pod that asked, or ""
	answer string // answerRecords or answerNoData
	action string // actionLogged, actionRefused or actionAllowed
}

// answer decides what the client gets for res, the next plugin's answer to r (whose name
// reads as n), and gives it. The decision is handed on by pointer: a copy of it in each
// call's arguments would grow answer's frame, under every write of a held answer.
func (g *NSGuard) answer(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, n *clusterdns.Name, res *dns.Msg, rcode int, err error) (int, error) {
	d := decision{name: *n}
	if !g.decide(ctx, w, res, err, &d) {
		w.WriteMsg(res)
		return rcode, err
	}
	publish(ctx, &d)
	ns, _, _ := strings.Cut(d.pod, "/")
	cc := g.counters.forClient(ctx, d.name.Zone, ns)
	d.count(cc)
	if d.action == actionRefused {
		w.WriteMsg(refusal(r, res, g.rcode, g.soas[d.name.Zone]))
		rcode, err = dns.RcodeSuccess, nil // written: the server must not answer again
		if plugin.ClientWrite(g.rcode) {
			rcode = g.rcode
		}
	} else {
		w.WriteMsg(res)
	}
	if d.action != actionAllowed {
		g.report(cc, r, res, &d)
		if g.podEvents && d.pod != "" {
			g.offer(cc, r, &d)
		}
	}
	return rcode, err
}

// offer hands d to the Events worker, as values.
//
//go:noinline
func (g *NSGuard) offer(cc *clientCounters, r *dns.Msg, d *decision) {
	k := events.Apex
	if d.kind == shadowKind {
		k = events.Shadow
	}
	g.events.Offer(events.Offer{Server: cc.server, Pod: d.pod, Kind: k, Name: d.name, QName: r.Question[0].Name,
		QType: r.Question[0].Qtype, Records: d.answer == answerRecords, Refused: d.action == actionRefused})
}

// decide reads who asked and what came back into d, a decision with only its name, and
// reports whether the answer is held.
// It is only when it is NOERROR: errors pass untouched, a truncated answer comes back over
// TCP, and an endpoint name that gave no records shadows nothing.
func (g *NSGuard) decide(ctx context.Context, w dns.ResponseWriter, res *dns.Msg, err error, d *decision) bool {
	if err != nil || res.Rcode != dns.RcodeSuccess || res.Truncated {
		return false
	}
	d.answer, d.action = answerNoData, actionLogged
	if len(res.Answer) > 0 {
		d.answer = answerRecords
	}
	mode := g.mode
	switch d.name.Shape {
	case clusterdns.NamespaceApex:
	case clusterdns.EndpointName:
		// Held only with a synced view (holds).
		if len(res.Answer) == 0 || !g.view.Shadowed(d.name) {
			return false
		}
		d.kind, mode = shadowKind, g.shadows
	default:
		return false
	}

	d.client = remoteIP(w)
	// A shadow was found in the view, so it is known to have synced. A view cut off from the
	// API server is still used, and that is counted: its last known state beats none.
	if g.view != nil && (d.kind == shadowKind || g.viewSynced(ctx)) {
		if g.view.Stale() {
			staleCounters.get(metrics.WithServer(ctx)).Inc()
		}
		d.pod = g.view.Pod(d.client) // "" for an address no single live Pod holds
	}
	switch {
	case d.kind == apexKind && g.allowed(d.name.Namespace), g.clientAllowed(d.pod):
		d.action = actionAllowed
	case mode == ModeRefuse:
		d.action = actionRefused
	}
	return true
}

// count adds the decision to its counter.
func (d *decision) count(cc *clientCounters) {
	if d.kind == apexKind {
		cc.countApex(d.answer, d.action)
		return
	}
	cc.countShadow(d.action)
}

// viewSynced reports whether the cluster view has synced, and counts it when not.
func (g *NSGuard) viewSynced(ctx context.Context) bool {
	if !g.view.Synced() {
		skipCounters.get(serverLabels{metrics.WithServer(ctx), skipNotSynced}).Inc()
		return false
	}
	return true
}

// allowed reports whether ns is under "allow namespace". ns keeps the client's case.
func (g *NSGuard) allowed(ns string) bool {
	if len(g.allowNamespaces) == 0 {
		return false
	}
	var buf [63]byte // a namespace label is at most 63 octets
	_, ok := g.allowNamespaces[string(clusterdns.AppendLower(buf[:0], ns))]
	return ok
}
