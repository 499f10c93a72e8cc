package kubedns

import (
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
)

// Forwarder is kube-dns's upstream: a DNS server at an "ip:port". explain asks it too, to
// predict the names outside the zone.
type Forwarder string

// Resolve implements model.UpstreamResolver.
func (f Forwarder) Resolve(qname, qtype string) clusterdns.Answer {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(qname), dns.StringToType[qtype])
	res, err := f.exchange(m)
	if err != nil {
		return clusterdns.Answer{Rcode: "SERVFAIL"}
	}
	a := clusterdns.Answer{Rcode: dns.RcodeToString[res.Rcode]}
	for _, rr := range res.Answer {
		h := rr.Header()
		data := strings.TrimPrefix(rr.String(), h.String())
		a.Records = append(a.Records, clusterdns.Record{Owner: strings.ToLower(h.Name), Type: dns.TypeToString[h.Rrtype], Data: data})
	}
	return a
}

func (f Forwarder) exchange(m *dns.Msg) (*dns.Msg, error) {
	c := &dns.Client{Timeout: 2 * time.Second}
	res, _, err := c.Exchange(m, string(f))
	return res, err
}

// forward passes a question outside the zone to the upstream, as kube-dns does, or
// answers SERVFAIL without one.
func (s *Server) forward(req *dns.Msg) *dns.Msg {
	if f, ok := s.upstream.(Forwarder); ok {
		if res, err := f.exchange(req); err == nil {
			return res
		}
	}
	m := new(dns.Msg)
	m.SetRcode(req, dns.RcodeServerFailure)
	return m
}
