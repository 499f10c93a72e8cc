package nsguard

import (
	"net"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// maxLoggedRecords bounds a log line: kube-dns can answer one CNAME per ExternalName Service.
const maxLoggedRecords = 5

// report logs one line for an answer that came through a namespace apex, within the log limits.
func (g *NSGuard) report(server string, w dns.ResponseWriter, r *dns.Msg, n Name, res *dns.Msg, answer, action string) {
	client := clientIP(w)
	q := r.Question[0]
	qtype := dns.Type(q.Qtype).String()
	ok, suppressed, reason := g.limiter.allow(client + " " + strings.ToLower(q.Name) + " " + qtype)
	if !ok {
		logLinesSuppressed.WithLabelValues(server, reason).Inc()
		return
	}
	log.Warning(formatFinding(client, q.Name, qtype, n, res, answer, action, g.mode, suppressed))
}

// formatFinding says who asked, what they most likely typed, what they got, and what to change.
func formatFinding(client, qname, qtype string, n Name, res *dns.Msg, answer, action string, mode Mode, suppressed uint64) string {
	ns := strings.ToLower(n.Namespace)
	var b strings.Builder
	b.WriteString("answer through namespace ")
	b.WriteString(strconv.Quote(ns))
	b.WriteString(": client=")
	b.WriteString(client)
	b.WriteString(" question=")
	b.WriteString(strconv.Quote(qname + " " + qtype))
	b.WriteString(" typed=")
	b.WriteString(strconv.Quote(ns))
	b.WriteString(" answer=")
	b.WriteString(answer)
	b.WriteString(" records=")
	b.WriteString(strconv.Quote(records(res.Answer)))
	b.WriteString(" action=")
	b.WriteString(action)
	b.WriteString(" fix=")
	b.WriteString(strconv.Quote(advice(ns, mode)))
	if suppressed > 0 {
		b.WriteString(" suppressed=")
		b.WriteString(strconv.FormatUint(suppressed, 10))
	}
	return b.String()
}

// advice is what to change, from the question alone.
func advice(ns string, mode Mode) string {
	s := "if " + ns + " is a Service, ask for " + ns + ".<its namespace>, or create an ExternalName Service " + ns +
		" in the client's namespace; if namespace " + ns + " is meant to answer, add 'allow namespace " + ns + "'"
	if mode == ModeLog {
		s += "; 'mode refuse' sends the client on to its next search domain"
	}
	return s
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

// clientIP is the address the query came from, without its port.
func clientIP(w dns.ResponseWriter) string {
	addr := w.RemoteAddr()
	if addr == nil {
		return "unknown"
	}
	switch a := addr.(type) {
	case *net.UDPAddr:
		return a.IP.String()
	case *net.TCPAddr:
		return a.IP.String()
	}
	if host, _, err := net.SplitHostPort(addr.String()); err == nil {
		return host
	}
	return addr.String()
}
