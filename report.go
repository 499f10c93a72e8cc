package nsguard

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/events"
	"github.com/nsguard/nsguard/internal/jsonlog"
	"github.com/nsguard/nsguard/logline"
)

// maxLoggedRecords bounds a log line: kube-dns can answer one CNAME per ExternalName Service.
const maxLoggedRecords = 5

// maxAdvised bounds how many namespaces a line names as holding the Service meant.
const maxAdvised = 3

// report logs one line about a decision, within the log limits. Nearly every call during an
// incident is a repeat the limits hold back: the line is built in a function of its own, so
// that its buffers stay off the stack of the calls that build none.
func (g *NSGuard) report(cc *clientCounters, r, res *dns.Msg, d *decision) {
	q := r.Question[0]
	var buf [300]byte // a name is at most 255 octets
	ok, held, reason := g.limiter.allow(limitKey(buf[:0], d.client, q))
	if !ok {
		cc.suppressedLine(reason)
		return
	}
	g.logLine(q, res, d, held)
}

//go:noinline
func (g *NSGuard) logLine(q dns.Question, res *dns.Msg, d *decision, held heldBack) {
	e := logline.Entry{Client: "unknown", Pod: d.pod, Question: q.Name + " " + dns.Type(q.Qtype).String(),
		Records: records(res.Answer), Action: d.action, Repeats: held.repeats, Suppressed: held.suppressed}
	if d.client.IsValid() {
		e.Client = d.client.String()
	}
	if d.kind == apexKind {
		fix := g.apexFix(*d)
		e.Kind, e.Subject, e.Typed, e.Answer = logline.Apex, fix.Name, fix.Name, d.answer
		e.Fix = fix.String() + "; " + fix.AllowHint()
		if g.mode == ModeLog {
			e.Fix += "; 'mode refuse' sends the client on to its next search domain"
		}
	} else {
		fix := d.name.ShadowFix()
		e.Kind, e.Subject, e.Typed = logline.Shadow, fix.Typed(), fix.Typed()
		e.Got, e.Meant, e.Fix = fix.Got(), fix.Meant(), fix.String()
	}
	if jsonlog.On() {
		jsonlog.Warn(e.Msg(), e.Attrs()...)
		return
	}
	var line [1024]byte
	log.Warning(string(e.Append(line[:0])))
}

// apexFix is what to change for a name that reached a namespace apex. With a view it names
// the client's namespace and where a Service of that name lives, aliases last.
func (g *NSGuard) apexFix(d decision) clusterdns.ApexFix { return g.advise(d.name, d.pod) }

// adviseEvent is apexFix for the Events worker.
func (g *NSGuard) adviseEvent(o events.Offer) clusterdns.ApexFix { return g.advise(o.Name, o.Pod) }

// advise is what to change for name n, an apex, asked by client Pod pod ("" unknown).
func (g *NSGuard) advise(n clusterdns.Name, pod string) clusterdns.ApexFix {
	f := clusterdns.ApexFix{Name: strings.ToLower(n.Namespace), Zone: n.Zone}
	f.Client, _, _ = strings.Cut(pod, "/")
	if g.view == nil || !g.view.Synced() {
		return f
	}
	services, aliases := g.view.Homes(f.Name, func(target string) bool { return clusterdns.LeadsInto(target, g.zones) })
	if len(services) == 0 {
		services = aliases // an alias still reaches something
	}
	f.Known, f.Homes = true, services[:min(len(services), maxAdvised)]
	f.More = len(services) - len(f.Homes)
	return f
}

// records renders at most maxLoggedRecords records on one line.
func records(rrs []dns.RR) string {
	var b strings.Builder
	for i, rr := range rrs {
		if i == maxLoggedRecords {
			b.WriteString("; (+" + strconv.Itoa(len(rrs)-i) + " more)")
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(strings.Join(strings.Fields(rr.String()), " "))
	}
	return b.String()
}

// limitKey appends what makes a question the same for the log limits: the client's address
// as 16 octets (no text to format), the name in lower case (resolvers randomise case) and the
// type. It does not allocate.
func limitKey(buf []byte, ip netip.Addr, q dns.Question) []byte {
	a := ip.As16() // the zero Addr, no client known, gives zeros
	buf = append(buf, a[:]...)
	buf = clusterdns.AppendLower(buf, q.Name)
	return append(buf, byte(q.Qtype>>8), byte(q.Qtype))
}
