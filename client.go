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

// clientPod is "namespace/name" of the Pod that sent the query from ip, or "" when the view
// does not know the address or more than one live Pod holds it. It does not allocate.
func (g *NSGuard) clientPod(ip netip.Addr) string {
	if !ip.IsValid() {
		return ""
	}
	return g.view.Pod(ip)
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
