// Package dnsserve runs a DNS handler on one address, over UDP and TCP, for the tests' stand-in
// servers, and frees the address before Close returns.
package dnsserve

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/miekg/dns"
)

// Server is a handler listening on one address over both transports.
type Server struct {
	udp, tcp *dns.Server
	serving  sync.WaitGroup
	addr     string
}

// Start listens on addr ("ip:port", port 0 picks one) for UDP and, on the same port, TCP, and
// serves h. Listening happens before Start returns, so a busy port is reported here: Go does
// not set SO_REUSEPORT, so even a leftover CoreDNS makes this fail.
func Start(addr string, h dns.Handler) (*Server, error) {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s/udp not free (leftover server?): %w", addr, err)
	}
	l, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		pc.Close()
		return nil, fmt.Errorf("%s/tcp not free (leftover server?): %w", addr, err)
	}
	s := &Server{addr: pc.LocalAddr().String()}
	var started sync.WaitGroup
	started.Add(2)
	s.udp = &dns.Server{PacketConn: pc, Handler: h, NotifyStartedFunc: started.Done}
	s.tcp = &dns.Server{Listener: l, Handler: h, NotifyStartedFunc: started.Done}
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		s.serving.Go(func() { srv.ActivateAndServe() })
	}
	// Shutdown before the servers are marked started would fail; wait.
	started.Wait()
	return s, nil
}

// Addr is the "ip:port" both transports listen on.
func (s *Server) Addr() string { return s.addr }

// Close stops both transports and returns once their sockets are closed. Shutdown alone does
// not promise that: it and the serving goroutine each close the socket, and whichever comes
// second returns at once, maybe before the first has closed it, so a bind that follows at
// once can find the address still in use.
func (s *Server) Close() error {
	err := errors.Join(s.udp.Shutdown(), s.tcp.Shutdown())
	s.serving.Wait()
	return err
}
