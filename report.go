package nsguard

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
)

// maxLoggedRecords bounds a log line: kube-dns can answer one CNAME per ExternalName Service.
const maxLoggedRecords = 5

// maxAdvised bounds how many namespaces a line names as holding the Service meant.
const maxAdvised = 3

// The kinds of line nsguard logs.
const (
	apexLine   = "answer through namespace"
	shadowLine = "endpoint shadows a Service"
)

// report logs one line about a decision, within the log limits.
func (g *NSGuard) report(server string, r, res *dns.Msg, d decision) {
	q := r.Question[0]
	var buf [300]byte // a name is at most 255 octets
	ok, held, reason := g.limiter.allow(limitKey(buf[:0], d.client, q))
	if !ok {
		suppressedCounters.get(serverLabels{server, reason}).Inc()
		return
	}
	var l line
	client := "unknown"
	if d.client.IsValid() {
		client = d.client.String()
	}
	l.add("client", client)
	if d.pod != "" {
		l.add("pod", d.pod)
	}
	l.quote("question", q.Name+" "+dns.Type(q.Qtype).String())
	if d.kind == apexKind {
		fix := g.apexFix(d)
		l.subject = apexLine + " " + strconv.Quote(fix.Name)
		l.quote("typed", fix.Name)
		l.add("answer", d.answer)
		l.quote("records", records(res.Answer))
		l.add("action", d.action)
		hint := fix.String() + "; " + fix.AllowHint()
		if g.mode == ModeLog {
			hint += "; 'mode refuse' sends the client on to its next search domain"
		}
		l.quote("fix", hint)
	} else {
		fix := shadowFix(d.name)
		l.subject = shadowLine + " " + strconv.Quote(fix.Typed())
		l.quote("typed", fix.Typed())
		l.quote("got", fix.Got())
		l.quote("meant", fix.Meant())
		l.quote("records", records(res.Answer))
		l.add("action", d.action)
		l.quote("fix", fix.String())
	}
	if held.repeats > 0 {
		l.add("repeats", strconv.FormatUint(held.repeats, 10))
	}
	if held.suppressed > 0 {
		l.add("suppressed", strconv.FormatUint(held.suppressed, 10))
	}
	log.Warning(l.String())
}

// apexFix is what to change for a name that reached a namespace apex. With a view it names
// the client's namespace and where a Service of that name lives, aliases last.
func (g *NSGuard) apexFix(d decision) clusterdns.ApexFix {
	f := clusterdns.ApexFix{Name: strings.ToLower(d.name.Namespace), Zone: d.name.Zone}
	f.Client, _, _ = strings.Cut(d.pod, "/")
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

// shadowFix is what to change for an endpoint name n that shadows a Service.
func shadowFix(n clusterdns.Name) clusterdns.ShadowFix {
	return clusterdns.ShadowFix{Endpoint: strings.ToLower(n.Endpoint), Service: strings.ToLower(n.Service),
		Namespace: strings.ToLower(n.Namespace), Zone: n.Zone}
}

// typedName is what the client most likely typed: a namespace's name, or <endpoint>.<service>.
func typedName(d decision) string {
	if d.kind == shadowKind {
		return shadowFix(d.name).Typed()
	}
	return strings.ToLower(d.name.Namespace)
}

// line builds one key=value log line; values a client chose are quoted.
type line struct {
	subject string
	b       strings.Builder
}

func (l *line) add(k, v string) {
	l.b.WriteByte(' ')
	l.b.WriteString(k)
	l.b.WriteByte('=')
	l.b.WriteString(v)
}

func (l *line) quote(k, v string) { l.add(k, strconv.Quote(v)) }

func (l *line) String() string { return l.subject + ":" + l.b.String() }

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
