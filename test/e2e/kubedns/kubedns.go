// Package kubedns is a tiny DNS server that answers like a LEGACY kube-dns
// holding the incident's fixtures (see shared/reference/dns-behavior.md):
// namespace `my-app` still exists and holds two ExternalName Services,
// other-app-1 and other-app-2. kube-dns stores ExternalName Services on the
// namespace node, so `my-app.svc.cluster.local` answers with a CNAME to one
// target (SkyDNS keeps one CNAME per owner) plus the A records of BOTH
// targets, in random order. Tests use it to show what real stub resolvers
// make of that answer, without needing CoreDNS or a control plane.
package kubedns

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"

	"github.com/miekg/dns"
)

// Fixture names and addresses, exported so tests assert against them.
const (
	Zone      = "cluster.local."
	TrapName  = "my-app.svc.cluster.local." // namespace apex of the legacy namespace
	Target1   = "other-app-1.example.net."  // CNAME target kept by kube-dns
	Target2   = "other-app-2.example.net."  // second target, A record only
	Target1IP = "192.0.2.11"
	Target2IP = "192.0.2.12"
	FixedName = "my-app.new-namespace-2.svc.cluster.local." // the Service the pod meant
	FixedIP   = "10.96.0.20"
	ttl       = 30
)

// Server is a running stand-in on UDP and TCP.
type Server struct {
	udp, tcp *dns.Server
	addr     string
}

// Start listens on addr ("ip:port", port 0 picks one) for UDP and TCP.
// Listening happens before Start returns, so a busy port is reported here:
// Go does not set SO_REUSEPORT, so even a leftover CoreDNS makes this fail.
func Start(addr string) (*Server, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("kubedns: %s/udp not free (leftover server?): %w", addr, err)
	}
	// Same port for TCP, even when the caller asked for port 0.
	l, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("kubedns: %s/tcp not free (leftover server?): %w", addr, err)
	}
	s := &Server{addr: pc.LocalAddr().String()}
	var started sync.WaitGroup
	started.Add(2)
	h := dns.HandlerFunc(handle)
	s.udp = &dns.Server{PacketConn: pc, Handler: h, NotifyStartedFunc: started.Done}
	s.tcp = &dns.Server{Listener: l, Handler: h, NotifyStartedFunc: started.Done}
	go s.udp.ActivateAndServe()
	go s.tcp.ActivateAndServe()
	// Shutdown before the servers are marked started would fail; wait.
	started.Wait()
	return s, nil
}

// Addr is the "ip:port" both transports listen on.
func (s *Server) Addr() string { return s.addr }

// Close stops both listeners.
func (s *Server) Close() error {
	return errors.Join(s.udp.Shutdown(), s.tcp.Shutdown())
}

func handle(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req) // echoes the question as asked, case included
	m.Authoritative = true
	if len(req.Question) == 1 {
		answer(m, req.Question[0])
	} else {
		m.Rcode = dns.RcodeFormatError
	}
	_ = w.WriteMsg(m)
}

// answer fills m for q. Matching is case-insensitive; owner names of records
// for the asked name keep the asker's spelling, as real servers do.
func answer(m *dns.Msg, q dns.Question) {
	name := strings.ToLower(q.Name)
	switch {
	case name == TrapName:
		// CNAME for every type; for A, both targets' A records, shuffled.
		m.Answer = append(m.Answer, &dns.CNAME{Hdr: hdr(q.Name, dns.TypeCNAME), Target: Target1})
		if q.Qtype == dns.TypeA {
			as := []dns.RR{a(Target1, Target1IP), a(Target2, Target2IP)}
			rand.Shuffle(len(as), func(i, j int) { as[i], as[j] = as[j], as[i] })
			m.Answer = append(m.Answer, as...)
		}
	case name == FixedName:
		if q.Qtype == dns.TypeA {
			m.Answer = append(m.Answer, a(q.Name, FixedIP))
		} else {
			m.Ns = append(m.Ns, soa()) // NODATA
		}
	case name == Zone || name == "svc."+Zone:
		m.Ns = append(m.Ns, soa()) // zone and svc apex exist: NODATA
	default:
		// Everything else, in the zone or not, is NXDOMAIN so the stub
		// resolvers go on down the search list (REFUSED would stop glibc).
		m.Rcode = dns.RcodeNameError
		if dns.IsSubDomain(Zone, name) {
			m.Ns = append(m.Ns, soa())
		}
	}
}

func hdr(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
}

func a(name, ip string) dns.RR {
	return &dns.A{Hdr: hdr(name, dns.TypeA), A: net.ParseIP(ip).To4()}
}

func soa() dns.RR {
	return &dns.SOA{Hdr: hdr(Zone, dns.TypeSOA), Ns: "ns.dns." + Zone, Mbox: "hostmaster." + Zone,
		Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: ttl}
}
