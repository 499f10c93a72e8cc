package nsguard

import (
	"context"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/metrics"
	"github.com/coredns/coredns/plugin/pkg/nonwriter"

	"github.com/miekg/dns"
)

// shadowed reports whether the endpoint name n (<a>.<b>.<C>.svc.<zone>) hides a Service:
// b is a Service in C with an endpoint called a, and Service a exists in namespace b. A
// client in C that typed "a.b" meant Service a in namespace b, but its first search
// candidate is this name, and the endpoint answers. It does not allocate.
func (v *view) shadowed(n Name) bool {
	if len(n.Endpoint) == 0 || n.Endpoint[0] == '_' || !IsDNSLabel(n.Endpoint) {
		return false // SRV port names and dashed IPs of other shapes are not Service names
	}
	var svc, ep, meant [128]byte
	if !v.hasEndpoint(lowerKey(svc[:0], n.Namespace, n.Service), lowerKey(ep[:0], "", n.Endpoint)) {
		return false
	}
	return v.hasService(lowerKey(meant[:0], n.Service, n.Endpoint))
}

// lowerKey appends "ns/name" (or just name) in lower case.
func lowerKey(buf []byte, ns, name string) []byte {
	for i := 0; i < len(ns); i++ {
		buf = append(buf, lowerASCII(ns[i]))
	}
	if ns != "" {
		buf = append(buf, '/')
	}
	for i := 0; i < len(name); i++ {
		buf = append(buf, lowerASCII(name[i]))
	}
	return buf
}

// serveShadow holds an endpoint name that shadows a Service, and logs or refuses the answer
// when the endpoint does answer.
func (g *NSGuard) serveShadow(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, n Name, pod string) (int, error) {
	nw := nonwriter.New(w)
	rcode, err := plugin.NextOrFailure(g.Name(), g.Next, ctx, nw, r)
	res := nw.Msg
	if res == nil {
		return rcode, err
	}
	if err != nil || res.Rcode != dns.RcodeSuccess || res.Truncated || len(res.Answer) == 0 {
		w.WriteMsg(res)
		return rcode, err
	}
	action := actionLogged
	switch {
	case g.clientAllowed(pod):
		action = actionAllowed
	case g.mode == ModeRefuse:
		action = actionRefused
	}
	server := metrics.WithServer(ctx)
	shadowCounters.get(shadowLabels{server, n.Zone, metrics.WithView(ctx), action}).Inc()
	if action == actionAllowed {
		w.WriteMsg(res)
		return rcode, err
	}
	rcode, err = g.respond(w, r, res, n.Zone, action, rcode, err)
	g.report(server, w, r, n, res, action, pod, shadowLine)
	return rcode, err
}
