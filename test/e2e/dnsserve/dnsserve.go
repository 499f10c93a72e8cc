// Package dnsserve runs a DNS handler on one address, over UDP and TCP, for the tests' stand-in
// servers, and frees the address before Close returns.
package dnsserve

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/test/e2e/loopback"
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
	pc, l, err := listen(addr)
	if err != nil {
		return nil, err
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

// listen binds addr over UDP, then the same port over TCP. Port 0 takes a port of package
// loopback (the kernel's own pick would be free for UDP only: the same number over TCP may be
// any connection's local port on a busy machine); one that something bound meanwhile is let
// go and another one drawn.
func listen(addr string) (net.PacketConn, net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	tries := 1
	if port == "0" {
		tries = 20
	}
	for i := 0; ; i++ {
		a := addr
		if port == "0" {
			p, err := loopback.FreePorts(1)
			if err != nil {
				return nil, nil, err
			}
			a = net.JoinHostPort(host, strconv.Itoa(p[0]))
		}
		pc, err := net.ListenPacket("udp", a)
		if err != nil {
			if i+1 < tries && errors.Is(err, syscall.EADDRINUSE) {
				continue
			}
			return nil, nil, fmt.Errorf("%s/udp not free (leftover server?): %w", a, err)
		}
		l, err := net.Listen("tcp", a)
		if err == nil {
			return pc, l, nil
		}
		pc.Close()
		if i+1 == tries || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, fmt.Errorf("%s/tcp not free (leftover server?): %w", a, err)
		}
	}
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
