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

// FreeTCPAddr returns a loopback address with a free port, for metrics and health endpoints.
func FreeTCPAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
