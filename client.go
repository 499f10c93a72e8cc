package nsguard

import (
	"net"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// remoteIP is the client's address, IPv4 in its 4-byte form.
func remoteIP(w dns.ResponseWriter) netip.Addr {
	var ip net.IP
	switch a := w.RemoteAddr().(type) {
	case *net.UDPAddr:
		ip = a.IP
	case *net.TCPAddr:
		ip = a.IP
	}
	addr, _ := netip.AddrFromSlice(ip)
	return addr.Unmap()
}

// clientAllowed reports whether the client's namespace is under "allow client".
func (g *NSGuard) clientAllowed(pod string) bool {
	if len(g.allowClients) == 0 || pod == "" {
		return false
	}
	ns, _, _ := strings.Cut(pod, "/")
	_, ok := g.allowClients[ns]
	return ok
}
