package nsguard

import (
	"github.com/miekg/dns"
)

// negativeTTL is how long a refusal may be cached: the TTL and minimum of its SOA, whatever
// the type and whatever the upstream's SOA said (kube-dns sends one with minimum 60 for AAAA
// and none for A). It is the kubernetes plugin's default TTL, and short, because a refusal
// is decided per client and a cache downstream may serve it to others.
const negativeTTL = 5

// refusal is the answer given in place of res: the query's ID, question and flags, the
// rcode, the zone's SOA for negative caching, no answer records and no signatures.
// res is only read: it may also sit in cache.
func refusal(r, res *dns.Msg, rcode int, own *dns.SOA) *dns.Msg {
	// One allocation for the message, its sections and their records, copied by value: this
	// runs for every refused query.
	a := &struct {
		m     dns.Msg
		q     [1]dns.Question
		ns    [1]dns.RR
		extra [1]dns.RR
		soa   dns.SOA
		opt   dns.OPT
	}{}
	m := &a.m
	m.Id = r.Id
	m.Response = true
	m.Opcode = r.Opcode
	m.RecursionDesired = r.RecursionDesired
	m.CheckingDisabled = r.CheckingDisabled
	m.Authoritative = res.Authoritative
	m.RecursionAvailable = res.RecursionAvailable
	m.Rcode = rcode
	a.q[0] = r.Question[0] // as the client asked it, case included
	m.Question = a.q[:]
	setSOA(&a.soa, res, own)
	a.ns[0] = &a.soa
	m.Ns = a.ns[:]
	if opt := r.IsEdns0(); opt != nil {
		a.extra[0] = replyOPT(&a.opt, opt, res.IsEdns0())
		m.Extra = a.extra[:]
	}
	return m
}

// setSOA makes s the SOA res carried in its authority section, or else own, the zone's, with
// the negative TTL of every refusal. A SOA holds only strings and numbers, so a copy by
// value shares nothing that can change.
func setSOA(s *dns.SOA, res *dns.Msg, own *dns.SOA) {
	*s = *own
	for _, rr := range res.Ns {
		if up, ok := rr.(*dns.SOA); ok {
			*s = *up
			break
		}
	}
	s.Hdr.Ttl, s.Minttl = negativeTTL, negativeTTL
}

// zoneSOA is the SOA a refusal carries when the upstream sent none (kube-dns, for A), made
// once per zone when the zones are set.
func zoneSOA(zone string) *dns.SOA {
	return &dns.SOA{
		Hdr:     dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: negativeTTL},
		Ns:      dnsJoin("ns.dns", zone),
		Mbox:    dnsJoin("hostmaster", zone),
		Serial:  1,
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  negativeTTL,
	}
}

// replyOPT is the OPT of the refusal, built in o: the upstream's when it sent one, else one
// that mirrors the query's. The upstream's options are copied, as they are pointers.
func replyOPT(o *dns.OPT, query, upstream *dns.OPT) dns.RR {
	if upstream != nil {
		if len(upstream.Option) > 0 {
			return dns.Copy(upstream)
		}
		*o = *upstream
		return o
	}
	o.Hdr = dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}
	o.SetUDPSize(query.UDPSize())
	o.SetDo(query.Do())
	return o
}

func dnsJoin(label, zone string) string {
	if zone == "." {
		return label + "."
	}
	return label + "." + zone
}
