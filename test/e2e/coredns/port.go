package coredns

import (
	"fmt"
	"net"
	"strconv"

	"github.com/nsguard/nsguard/test/e2e/loopback"
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
// connection, every later one too) would reach either.
func FreeTCPAddrs(n int) ([]string, error) {
	ports, err := loopback.FreePorts(n)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
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
