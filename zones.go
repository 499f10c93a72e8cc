package nsguard

import (
	"fmt"
	"net"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/clusterdns"
)

// parseZones returns the zones given on the nsguard line, or nil when there are none: the
// block's cluster zones are then found at start-up (clusterZones). Unlike
// plugin.OriginsFromArgsOrServerBlock it rejects what it cannot use.
func parseZones(c *caddy.Controller, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	server := plugin.OriginsFromArgsOrServerBlock(nil, c.ServerBlockKeys)
	var zones []string
	for _, a := range args {
		zs := plugin.Host(a).NormalizeExact()
		if len(zs) == 0 {
			return nil, c.Errf("invalid zone %q", a)
		}
		for _, z := range zs {
			if z != "." && clusterdns.CheckName(z) != nil {
				return nil, c.Errf("invalid zone %q: %v", a, clusterdns.CheckName(z))
			}
			if plugin.Zones(server).Matches(z) == "" {
				return nil, c.Errf("zone %q is not under the server block's zones %s", a, strings.Join(server, " "))
			}
		}
		zones = append(zones, zs...)
	}
	return lower(zones), nil
}

// clusterZones are the zones a bare nsguard guards: the cluster zones of the kubernetes
// plugin in the same server block, or else the block's own zones (a node-local cache that
// forwards cluster.local). Reverse zones hold no Service names, and a block that serves
// the root without a kubernetes plugin has no cluster zone to guard: that is an error.
func clusterZones(k8s plugin.Handler, keys []string) ([]string, error) {
	if k, ok := k8s.(*kubernetes.Kubernetes); ok {
		if zones := forwardZones(k.Zones); len(zones) > 0 {
			return zones, nil
		}
	}
	var zones []string
	for _, z := range forwardZones(plugin.OriginsFromArgsOrServerBlock(nil, keys)) {
		if z != "." {
			zones = append(zones, z)
		}
	}
	if len(zones) == 0 {
		block := make([]string, len(keys))
		for i, k := range keys {
			block[i] = strings.TrimPrefix(k, "dns://")
		}
		return nil, fmt.Errorf("no cluster zone to guard in server block %q: it has no kubernetes plugin and "+
			"serves no forward zone but the root; name the cluster zone, as in \"nsguard cluster.local\"", strings.Join(block, " "))
	}
	return zones, nil
}

// forwardZones drops reverse zones and returns the rest in lower case.
func forwardZones(zones []string) []string {
	var out []string
	for _, z := range zones {
		if !dns.IsSubDomain("in-addr.arpa.", z) && !dns.IsSubDomain("ip6.arpa.", z) {
			out = append(out, strings.ToLower(z))
		}
	}
	return out
}

func lower(zones []string) []string {
	out := make([]string, len(zones))
	for i, z := range zones {
		out[i] = strings.ToLower(z)
	}
	return out
}

// serverAddrs are the values metrics.WithServer gives the queries of conf's servers, so that
// gauges set outside a query carry the same server label as the counters.
func serverAddrs(conf *dnsserver.Config) []string {
	var out []string
	for _, h := range conf.ListenHosts {
		addr := net.JoinHostPort(h, conf.Port)
		if a, err := net.ResolveTCPAddr("tcp", addr); err == nil {
			addr = a.String()
		}
		out = append(out, conf.Transport+"://"+addr)
	}
	return out
}
