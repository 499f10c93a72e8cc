package coredns

import (
	"fmt"
	"net"
)

// CheckPortFree fails when anything listens on ip:53. CoreDNS sets SO_REUSEPORT, so a
// leftover server would silently share the port and take half the queries; a plain bind,
// without that option, cannot share it and so finds the leftover.
func CheckPortFree(ip string) error {
	addr := net.JoinHostPort(ip, "53")
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return fmt.Errorf("udp %s is taken (a leftover DNS server?): %v", addr, err)
	}
	u.Close()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("tcp %s is taken (a leftover DNS server?): %v", addr, err)
	}
	l.Close()
	return nil
}

// FreeTCPAddrs returns n loopback addresses with distinct free ports, for a server's metrics,
// health, ready and pprof endpoints. CoreDNS binds each with SO_REUSEPORT, so two endpoints
// given one port would share it silently, and each request (a scrape over a kept-alive
// connection, every later one too) would reach either. Each port is held until all n are
// chosen, so the kernel cannot hand one out twice.
func FreeTCPAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// FreeTCPAddr returns a loopback address with a free port, for a server's one endpoint.
func FreeTCPAddr() (string, error) {
	addrs, err := FreeTCPAddrs(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}
