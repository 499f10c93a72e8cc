package model

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/nsguard/nsguard/clusterdns"
)

// CoreDNS is the answer of CoreDNS's kubernetes plugin to a qtype question for qname in
// zone, with the options the Corefiles clusters ship (pods insecure, no
// endpoint_pod_names); up answers the names outside the zone (nil: not known).
//
//   - <ns>.svc.<zone> is NODATA while namespace ns exists (an NXDOMAIN would deny every name
//     below it), NXDOMAIN once it is gone;
//   - svc.<zone>, pod.<zone> and <zone> are NODATA;
//   - an ExternalName Service answers a CNAME and what its target answers.
func (c *Cluster) CoreDNS(qname, qtype, zone string, up UpstreamResolver) clusterdns.Answer {
	return coreDNS{c: c, zone: clusterdns.FQDN(zone), up: up}.answer(clusterdns.FQDN(qname), qtype, 0)
}

type coreDNS struct {
	c    *Cluster
	zone string
	up   UpstreamResolver
}

func (k coreDNS) answer(qname, qtype string, depth int) clusterdns.Answer {
	n := clusterdns.ClassifyIn(qname, clusterdns.MatchZone(qname, []string{k.zone}))
	switch n.Shape {
	case clusterdns.OutOfZone:
		return upstream(k.up, qname, qtype)
	case clusterdns.ZoneApex, clusterdns.SvcApex:
		return clusterdns.Answer{Rcode: clusterdns.NoError}
	case clusterdns.PodName:
		if strings.EqualFold(qname, "pod."+k.zone) {
			return clusterdns.Answer{Rcode: clusterdns.NoError}
		}
		ip, ok := podAddress(qname, k.zone)
		if !ok {
			return nxdomain
		}
		return k.addresses(qname, qtype, []string{ip}, "with pods insecure, as the Corefiles clusters run set")
	case clusterdns.NamespaceApex:
		if k.c.Namespace(n.Namespace) != nil {
			return clusterdns.Answer{Rcode: clusterdns.NoError, Note: "namespace apex"}
		}
		return nxdomain
	case clusterdns.ServiceName:
		s := k.c.Service(n.Namespace, n.Service)
		switch {
		case s == nil:
			return nxdomain
		case s.IsExternalName():
			return k.alias(qname, qtype, clusterdns.FQDN(s.ExternalName), depth)
		case s.Headless:
			var addrs []string
			for _, e := range k.c.Endpoints(s.Namespace, s.Name) {
				addrs = appendNew(addrs, e.Addrs...)
			}
			if len(addrs) == 0 {
				return clusterdns.Answer{Rcode: clusterdns.NXDomain, Note: "headless Service without ready endpoints"}
			}
			return k.addresses(qname, qtype, addrs, "")
		case len(s.ClusterIPs) == 0:
			return clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{{Owner: qname, Type: qtype, Data: "<cluster IP>"}}}
		}
		return k.addresses(qname, qtype, s.ClusterIPs, "")
	case clusterdns.EndpointName:
		s := k.c.Service(n.Namespace, n.Service)
		if s == nil || s.IsExternalName() || strings.HasPrefix(n.Endpoint, "_") {
			return nxdomain // ExternalName Services have no endpoint names (coredns#5734)
		}
		e := k.c.Endpoint(n.Namespace, n.Service, n.Endpoint)
		switch {
		case e == nil:
			return nxdomain
		case e.Kind == clusterdns.EndpointPodName:
			return clusterdns.Answer{Rcode: clusterdns.NXDomain, Note: "answers " + strings.Join(e.Addrs, ", ") + " with endpoint_pod_names"}
		case len(e.Addrs) == 0:
			return clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{{Owner: qname, Type: qtype, Data: "<endpoint address>"}}} // e.g. a StatefulSet's pod read offline
		}
		return k.addresses(qname, qtype, e.Addrs, "")
	}
	return nxdomain
}

// addresses answers the A or AAAA records of addrs; other questions of the name are NODATA.
func (k coreDNS) addresses(qname, qtype string, addrs []string, note string) clusterdns.Answer {
	a := clusterdns.Answer{Rcode: clusterdns.NoError, Note: note}
	if qtype != clusterdns.TypeA && qtype != clusterdns.TypeAAAA {
		return a
	}
	for _, s := range addrs {
		if ip, err := netip.ParseAddr(s); err == nil && ip.Is4() == (qtype == clusterdns.TypeA) {
			a.Records = append(a.Records, clusterdns.Record{Owner: qname, Type: qtype, Data: ip.String()})
		}
	}
	return a
}

// alias answers an ExternalName Service: a CNAME, and for addresses what the target answers.
func (k coreDNS) alias(qname, qtype, target string, depth int) clusterdns.Answer {
	cname := clusterdns.Record{Owner: qname, Type: clusterdns.TypeCNAME, Data: target}
	if qtype != clusterdns.TypeA && qtype != clusterdns.TypeAAAA {
		if qtype == clusterdns.TypeCNAME {
			return clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{cname}}
		}
		return clusterdns.Answer{Rcode: clusterdns.NoError}
	}
	if target == qname || depth >= maxChain {
		return clusterdns.Answer{Rcode: clusterdns.NoError}
	}
	// Outside the zone, any answer from the upstream keeps the CNAME, even NXDOMAIN.
	t, ok := follow(target, qtype, k.zone, k.up, true, func(name string) clusterdns.Answer { return k.answer(name, qtype, depth+1) })
	if !ok {
		return clusterdns.Answer{Rcode: clusterdns.NoError}
	}
	return clusterdns.Answer{Rcode: clusterdns.NoError, Records: append([]clusterdns.Record{cname}, t.Records...)}
}

func appendNew(list []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	return list
}
