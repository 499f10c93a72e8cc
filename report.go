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
	q := r.Question[0]
	var buf [300]byte // a name is at most 255 octets
	ok, suppressed, reason := g.limiter.allow(limitKey(buf[:0], w, q))
	if !ok {
		suppressedCounters.get(suppressedLabels{server, reason}).Inc()
		return
	}
	log.Warning(formatFinding(clientIP(w), q.Name, dns.Type(q.Qtype).String(), n, res, answer, action, g.mode, suppressed))
}

// limitKey appends what makes a question the same for the log limits: the client's address,
// the name in lower case (resolvers randomise case) and the type. It does not allocate.
func limitKey(buf []byte, w dns.ResponseWriter, q dns.Question) []byte {
	var ip net.IP
	switch a := w.RemoteAddr().(type) {
	case *net.UDPAddr:
		ip = a.IP
	case *net.TCPAddr:
		ip = a.IP
	}
	if ip4 := ip.To4(); ip4 != nil {
		ip = ip4 // the same client over UDP and TCP
	}
	buf = append(buf, ip...)
	buf = append(buf, 0)
	for i := 0; i < len(q.Name); i++ {
		buf = append(buf, lowerASCII(q.Name[i]))
	}
	return append(buf, byte(q.Qtype>>8), byte(q.Qtype))
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
