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

// report logs one line about an answer, within the log limits.
func (g *NSGuard) report(server string, ip netip.Addr, r *dns.Msg, n clusterdns.Name, res *dns.Msg, action, pod, kind string) {
	q := r.Question[0]
	var buf [300]byte // a name is at most 255 octets
	ok, suppressed, reason := g.limiter.allow(limitKey(buf[:0], ip, q))
	if !ok {
		suppressedCounters.get(suppressedLabels{server, reason}).Inc()
		return
	}
	l := line{kind: kind, n: n}
	client := "unknown"
	if ip.IsValid() {
		client = ip.String()
	}
	l.add("client", client)
	if pod != "" {
		l.add("pod", pod)
	}
	l.quote("question", q.Name+" "+dns.Type(q.Qtype).String())
	switch kind {
	case apexLine:
		ns := strings.ToLower(n.Namespace)
		answer := answerNoData
		if len(res.Answer) > 0 {
			answer = answerRecords
		}
		l.quote("typed", ns)
		l.add("answer", answer)
		l.quote("records", records(res.Answer))
		l.add("action", action)
		l.quote("fix", g.apexAdvice(ns, pod))
	case shadowLine:
		a, b, c := strings.ToLower(n.Endpoint), strings.ToLower(n.Service), strings.ToLower(n.Namespace)
		l.quote("typed", a+"."+b)
		l.quote("got", "endpoint "+a+" of Service "+b+" in namespace "+c)
		l.quote("meant", "Service "+a+" in namespace "+b)
		l.quote("records", records(res.Answer))
		l.add("action", action)
		l.quote("fix", "ask for "+a+"."+b+".svc."+strings.TrimSuffix(n.Zone, ".")+" (or "+a+"."+b+".svc), which only the Service answers; or rename the endpoint "+a+" of Service "+b)
	}
	if suppressed > 0 {
		l.add("suppressed", strconv.FormatUint(suppressed, 10))
	}
	log.Warning(l.String())
}

// apexAdvice says what to change for a name that reached namespace ns. With a view it names
// the client's namespace and where a Service of that name lives.
func (g *NSGuard) apexAdvice(ns, pod string) string {
	client := "the client's namespace"
	if pod != "" {
		client, _, _ = strings.Cut(pod, "/")
	}
	var s string
	if g.view.usable() {
		where, total := g.view.namespacesWithService(ns, maxAdvised)
		switch {
		case total == 0:
			s = "no Service " + ns + " exists in any namespace; if one is meant, create it"
		default:
			if pod != "" {
				s = "no Service " + ns + " in " + client + "; "
			}
			s += "Service " + ns + " exists in " + strings.Join(where, ", ")
			if total > len(where) {
				s += " and " + strconv.Itoa(total-len(where)) + " more"
			}
			s += "; use " + ns + "." + where[0] + ", or create an ExternalName Service " + ns + " in " + client +
				" pointing at " + ns + "." + where[0] + ".svc." + strings.TrimSuffix(g.zoneOf(), ".")
		}
	} else {
		s = "if " + ns + " is a Service, ask for " + ns + ".<its namespace>, or create an ExternalName Service " + ns + " in " + client
	}
	s += "; if namespace " + ns + " is meant to answer, add 'allow namespace " + ns + "'"
	if g.mode == ModeLog {
		s += "; 'mode refuse' sends the client on to its next search domain"
	}
	return s
}

// zoneOf is the first guarded zone, for the fully qualified names in advice.
func (g *NSGuard) zoneOf() string {
	if len(g.zones) == 0 {
		return "cluster.local."
	}
	return g.zones[0]
}

// line builds one key=value log line; values a client chose are quoted.
type line struct {
	kind string
	n    clusterdns.Name
	b    strings.Builder
}

func (l *line) add(k, v string) {
	l.b.WriteByte(' ')
	l.b.WriteString(k)
	l.b.WriteByte('=')
	l.b.WriteString(v)
}

func (l *line) quote(k, v string) { l.add(k, strconv.Quote(v)) }

func (l *line) String() string {
	subject := strconv.Quote(strings.ToLower(l.n.Namespace))
	if l.kind == shadowLine {
		subject = strconv.Quote(strings.ToLower(l.n.Endpoint + "." + l.n.Service))
	}
	return l.kind + " " + subject + ":" + l.b.String()
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

// limitKey appends what makes a question the same for the log limits: the client's address,
// the name in lower case (resolvers randomise case) and the type. It does not allocate.
func limitKey(buf []byte, ip netip.Addr, q dns.Question) []byte {
	buf = ip.AppendTo(buf)
	buf = append(buf, 0)
	buf = clusterdns.AppendLower(buf, q.Name)
	return append(buf, byte(q.Qtype>>8), byte(q.Qtype))
}
