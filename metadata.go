package nsguard

import (
	"context"
	"strings"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/logline"
)

// The metadata labels nsguard publishes for each query it holds, for log ({/nsguard/action})
// and dnstap (extra) among others.
const (
	labelAction          = pluginName + "/action"           // logged, refused or allowed
	labelKind            = pluginName + "/kind"             // namespace or endpoint shadow
	labelTyped           = pluginName + "/typed"            // what the client typed
	labelClientPod       = pluginName + "/client-pod"       // the name of the Pod that asked
	labelClientNamespace = pluginName + "/client-namespace" // and its namespace
)

// published is what nsguard decided about one query, for the metadata plugin's value funcs,
// which read it after the answer: nothing until decided, and nothing for an answer let
// through untouched.
type published struct {
	decided bool
	d       decision
}

type publishedKey struct{}

// Metadata implements metadata.Provider. The metadata plugin calls it for every query,
// before any answer: it publishes value funcs only for a name that passes the quick look
// that decides whether nsguard may hold it, so every other query costs nothing.
func (g *NSGuard) Metadata(ctx context.Context, state request.Request) context.Context {
	if r := state.Req; r == nil || len(r.Question) != 1 || !g.mayHold(r.Question[0].Name) || !g.mayPublish(r) {
		return ctx
	}
	p := &published{}
	metadata.SetValueFunc(ctx, labelAction, func() string { return p.action() })
	metadata.SetValueFunc(ctx, labelKind, func() string { return p.kind() })
	metadata.SetValueFunc(ctx, labelTyped, func() string { return p.typed() })
	metadata.SetValueFunc(ctx, labelClientPod, func() string { return p.pod(false) })
	metadata.SetValueFunc(ctx, labelClientNamespace, func() string { return p.pod(true) })
	return context.WithValue(ctx, publishedKey{}, p)
}

// mayPublish is holds without its counting, and with the view's look for a shadow made
// now: most endpoint-shaped names are search candidates (api.github.com.svc.<zone>) that
// shadow nothing, and they must cost no allocation here.
func (g *NSGuard) mayPublish(r *dns.Msg) bool {
	q := r.Question[0]
	if r.Opcode != dns.OpcodeQuery || q.Qclass != dns.ClassINET || q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR {
		return false
	}
	zone := clusterdns.MatchZone(q.Name, g.zones)
	if n, ok := clusterdns.EndpointIn(q.Name, zone); ok {
		return g.view != nil && g.view.Synced() && g.view.Shadowed(n)
	}
	return clusterdns.ClassifyIn(q.Name, zone).Shape == clusterdns.NamespaceApex
}

// publish hands d to the value funcs Metadata set for this query, if it did. It runs before
// the answer is written: dnstap reads the values as it taps the response.
//
//go:noinline
func publish(ctx context.Context, d *decision) {
	if p, ok := ctx.Value(publishedKey{}).(*published); ok {
		p.decided, p.d = true, *d
	}
}

func (p *published) action() string {
	if !p.decided {
		return ""
	}
	return p.d.action
}

func (p *published) kind() string {
	switch {
	case !p.decided:
		return ""
	case p.d.kind == shadowKind:
		return logline.Shadow.String()
	}
	return logline.Apex.String()
}

// typed is the name the client typed, as the log line's typed says it.
func (p *published) typed() string {
	switch {
	case !p.decided:
		return ""
	case p.d.kind == shadowKind:
		return p.d.name.ShadowFix().Typed()
	}
	return strings.ToLower(p.d.name.Namespace)
}

// pod is the client Pod's namespace, or its name; "" when no single live Pod holds the
// client's address.
func (p *published) pod(namespace bool) string {
	if !p.decided {
		return ""
	}
	ns, name, _ := strings.Cut(p.d.pod, "/")
	if namespace {
		return ns
	}
	return name
}

var _ metadata.Provider = (*NSGuard)(nil)
