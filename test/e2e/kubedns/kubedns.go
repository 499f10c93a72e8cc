// Package kubedns is a stand-in for the legacy kube-dns, the cluster DNS some managed
// clusters still run. It answers from a cluster's objects with clusterdns's model of
// kube-dns, and puts the answer on the wire as kube-dns does:
//
//   - a namespace apex that holds several ExternalName Services answers one CNAME, to the
//     last target in a Go map's order, with every target's addresses, the records of the
//     answer rebuilt from that map, so in random order too;
//   - NXDOMAIN carries no AA and no RA; NODATA carries AA; both carry kube-dns's SOA,
//     ns.dns.<zone> hostmaster.<zone> <hour> 28800 7200 604800 60, with TTL 60;
//   - answer records have TTL 30, and there is no OPT record;
//   - names outside the zone, and ExternalName targets outside it, go to an upstream.
package kubedns

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/test/e2e/dnsserve"
)

// Zone is the cluster zone the stand-in serves.
const Zone = "cluster.local."

// ttl is kube-dns's TTL of every answer record; negativeTTL that of its SOA.
const (
	ttl         = 30
	negativeTTL = 60
)

// Server is a running stand-in on UDP and TCP.
type Server struct {
	srv      *dnsserve.Server
	cluster  atomic.Pointer[model.Cluster]
	upstream model.UpstreamResolver
}

// Start listens on addr ("ip:port", port 0 picks one) for UDP and TCP and answers from c;
// upstream ("ip:port", or "" for none) answers names outside the zone. A busy port is
// reported here.
func Start(addr string, c *model.Cluster, upstream string) (*Server, error) {
	s := &Server{}
	if upstream != "" {
		s.upstream = Forwarder(upstream)
	}
	s.cluster.Store(c)
	srv, err := dnsserve.Start(addr, dns.HandlerFunc(s.handle))
	if err != nil {
		return nil, fmt.Errorf("kubedns: %w", err)
	}
	s.srv = srv
	return s, nil
}

// Addr is the "ip:port" both transports listen on.
func (s *Server) Addr() string { return s.srv.Addr() }

// SetCluster replaces the objects the stand-in answers from, as kube-dns's watch would.
func (s *Server) SetCluster(c *model.Cluster) { s.cluster.Store(c) }

// Close stops both listeners and returns once the address is free.
func (s *Server) Close() error { return s.srv.Close() }

func (s *Server) handle(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) != 1 {
		m := new(dns.Msg)
		m.SetRcode(req, dns.RcodeFormatError)
		w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	qname := strings.ToLower(q.Name)
	if !dns.IsSubDomain(Zone, qname) {
		w.WriteMsg(s.forward(req))
		return
	}
	a := s.cluster.Load().KubeDNS(qname, dns.TypeToString[q.Qtype], Zone, s.upstream)
	w.WriteMsg(reply(req, a))
}

// reply puts a on the wire as kube-dns does.
func reply(req *dns.Msg, a clusterdns.Answer) *dns.Msg {
	m := new(dns.Msg)
	if a.Rcode == clusterdns.NXDomain {
		m.SetRcode(req, dns.RcodeNameError) // a fresh message: no AA, no RA
		m.Ns = []dns.RR{soa()}
		return m
	}
	m.SetReply(req) // the question as asked, case included
	m.Authoritative, m.RecursionAvailable = true, true
	q := req.Question[0]
	for _, r := range answerRecords(q.Name, a) {
		m.Answer = append(m.Answer, rr(r, q.Name))
	}
	for _, r := range a.Additional {
		m.Extra = append(m.Extra, rr(r, q.Name))
	}
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{soa()}
	}
	return m
}

// answerRecords orders a's records as kube-dns does. It walks the namespace's entries in
// random order, each a CNAME and its target's records, then keeps one CNAME per owner, the
// last one, in a Go map; when that map holds fewer records, the answer is rebuilt from it.
func answerRecords(qname string, a clusterdns.Answer) []clusterdns.Record {
	if len(a.CNAMEOneOf) == 0 {
		recs := a.Records
		if a.Shuffled {
			recs = append([]clusterdns.Record(nil), recs...)
			rand.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		}
		return recs
	}
	owner := strings.ToLower(qname)
	targets := append([]string(nil), a.CNAMEOneOf...)
	rand.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
	var walked []clusterdns.Record
	for _, t := range targets {
		walked = append(walked, clusterdns.Record{Owner: owner, Type: clusterdns.TypeCNAME, Data: t})
		for _, r := range a.Records {
			if r.Owner == t {
				walked = append(walked, r)
			}
		}
	}
	kept := map[string]clusterdns.Record{}
	for _, r := range walked {
		key := r.String()
		if r.Type == clusterdns.TypeCNAME {
			key = r.Owner + " CNAME"
		}
		kept[key] = r
	}
	out := make([]clusterdns.Record, 0, len(kept))
	for _, r := range kept { // a Go map's order, as kube-dns's
		out = append(out, r)
	}
	return out
}

// rr makes a clusterdns record a wire record; the question's name keeps the client's case.
func rr(r clusterdns.Record, qname string) dns.RR {
	owner := r.Owner
	if strings.EqualFold(owner, qname) {
		owner = qname
	}
	x, err := dns.NewRR(owner + " " + strconv.Itoa(ttl) + " IN " + r.Type + " " + r.Data)
	if err != nil {
		panic(fmt.Sprintf("kubedns: record %q: %v", r, err)) // the model made it: a bug there
	}
	return x
}

func soa() dns.RR {
	return &dns.SOA{
		Hdr: dns.RR_Header{Name: Zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: negativeTTL},
		Ns:  "ns.dns." + Zone, Mbox: "hostmaster." + Zone,
		Serial:  uint32(time.Now().Truncate(time.Hour).Unix()),
		Refresh: 28800, Retry: 7200, Expire: 604800, Minttl: negativeTTL,
	}
}
