package nsguard

import (
	"context"

	"github.com/coredns/coredns/plugin/test"

	"github.com/miekg/dns"
)

// upstream stands in for the plugin after nsguard. It writes what answer makes of the
// query (nothing when answer is nil), returns rcode, and keeps what it wrote.
type upstream struct {
	answer  func(r *dns.Msg) *dns.Msg
	rcode   int
	written *dns.Msg
	packed  []byte // written, as it was when written
}

func (u *upstream) Name() string { return "upstream" }

func (u *upstream) ServeDNS(_ context.Context, w dns.ResponseWriter, r *dns.Msg) (int, error) {
	if u.answer == nil {
		return u.rcode, nil
	}
	u.written = u.answer(r)
	u.packed, _ = u.written.Pack()
	w.WriteMsg(u.written)
	return u.rcode, nil
}

const clusterSOA = "cluster.local. 5 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1700000000 7200 1800 86400 5"

// unchanged reports whether the written message is still as it was written.
func (u *upstream) unchanged() bool {
	now, _ := u.written.Pack()
	return string(now) == string(u.packed)
}

// reply is what a server answers to r: the question as asked, EDNS0 mirrored like CoreDNS does.
func reply(r *dns.Msg, rcode int) *dns.Msg {
	m := new(dns.Msg)
	m.SetRcode(r, rcode)
	m.Authoritative = true
	if o := r.IsEdns0(); o != nil {
		m.SetEdns0(o.UDPSize(), o.Do())
	}
	return m
}

// The upstreams nsguard meets in front of a namespace apex.
var upstreams = map[string]func() *upstream{
	// CoreDNS kubernetes: NODATA with the zone's SOA.
	"kubernetes": func() *upstream {
		return &upstream{rcode: dns.RcodeSuccess, answer: func(r *dns.Msg) *dns.Msg {
			m := reply(r, dns.RcodeSuccess)
			m.Ns = []dns.RR{test.SOA(clusterSOA)}
			return m
		}}
	},
	// A server that adds an EDNS0 option, as one with nsid does.
	"kubernetes nsid": func() *upstream {
		return &upstream{rcode: dns.RcodeSuccess, answer: func(r *dns.Msg) *dns.Msg {
			m := reply(r, dns.RcodeSuccess)
			m.Ns = []dns.RR{test.SOA(clusterSOA)}
			if o := m.IsEdns0(); o != nil {
				o.Option = append(o.Option, &dns.EDNS0_NSID{Code: dns.EDNS0NSID, Nsid: "636f7265646e73"})
			}
			return m
		}}
	},
	// kube-dns: one CNAME to an ExternalName target plus the A records of two targets, signed.
	"kube-dns": func() *upstream {
		return &upstream{rcode: dns.RcodeSuccess, answer: func(r *dns.Msg) *dns.Msg {
			m := reply(r, dns.RcodeSuccess)
			m.Authoritative = false
			m.RecursionAvailable = true
			owner := "my-app.svc.cluster.local."
			if len(r.Question) > 0 {
				owner = r.Question[0].Name
			}
			m.Answer = []dns.RR{
				&dns.CNAME{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: 30}, Target: "other-app-1.example.net."},
				&dns.RRSIG{Hdr: dns.RR_Header{Name: owner, Rrtype: dns.TypeRRSIG, Class: dns.ClassINET, Ttl: 30}, TypeCovered: dns.TypeCNAME,
					Algorithm: 8, Labels: 4, OrigTtl: 30, Expiration: 1893456000, Inception: 1577836800, KeyTag: 12345, SignerName: "cluster.local.", Signature: "c2lnbmF0dXJl"},
				test.A("other-app-1.example.net. 30 IN A 192.0.2.11"),
				test.A("other-app-2.example.net. 30 IN A 192.0.2.12"),
			}
			return m
		}}
	},
	// kube-dns for an AAAA question at a namespace apex: NODATA with its own SOA.
	"kube-dns nodata": func() *upstream {
		return &upstream{rcode: dns.RcodeSuccess, answer: func(r *dns.Msg) *dns.Msg {
			m := reply(r, dns.RcodeSuccess)
			m.Ns = []dns.RR{test.SOA("cluster.local. 60 IN SOA ns.dns.cluster.local. hostmaster.cluster.local. 1796227200 28800 7200 604800 60")}
			return m
		}}
	},
	// CoreDNS kubernetes for an endpoint name: its address.
	"endpoint": func() *upstream {
		return &upstream{rcode: dns.RcodeSuccess, answer: func(r *dns.Msg) *dns.Msg {
			m := reply(r, dns.RcodeSuccess)
			if len(r.Question) > 0 {
				m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: []byte{10, 244, 3, 1}}}
			}
			return m
		}}
	},
	"nxdomain": func() *upstream {
		return &upstream{rcode: dns.RcodeNameError, answer: func(r *dns.Msg) *dns.Msg {
			m := reply(r, dns.RcodeNameError)
			m.Ns = []dns.RR{test.SOA(clusterSOA)}
			return m
		}}
	},
	// A SERVFAIL the next plugin wrote itself, as forward does.
	"servfail written": func() *upstream {
		return &upstream{rcode: dns.RcodeServerFailure, answer: func(r *dns.Msg) *dns.Msg {
			return reply(r, dns.RcodeServerFailure)
		}}
	},
	// A SERVFAIL left to the server to write.
	"servfail": func() *upstream { return &upstream{rcode: dns.RcodeServerFailure} },
	// Claims success but wrote nothing.
	"silent": func() *upstream { return &upstream{rcode: dns.RcodeSuccess} },
	"truncated": func() *upstream {
		return &upstream{rcode: dns.RcodeSuccess, answer: func(r *dns.Msg) *dns.Msg {
			m := reply(r, dns.RcodeSuccess)
			m.Truncated = true
			return m
		}}
	},
}
