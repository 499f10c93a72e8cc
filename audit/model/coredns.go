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
func (c *Cluster) CoreDNS(qname, qtype, zone string, up UpstreamResolver) Answer {
	return coreDNS{c: c, zone: clusterdns.FQDN(zone), up: up}.answer(clusterdns.FQDN(qname), qtype, 0)
}

type coreDNS struct {
	c    *Cluster
	zone string
	up   UpstreamResolver
}

func (k coreDNS) answer(qname, qtype string, depth int) Answer {
	n := clusterdns.ClassifyIn(qname, clusterdns.MatchZone(qname, []string{k.zone}))
	switch n.Shape {
	case clusterdns.OutOfZone:
		return upstream(k.up, qname, qtype)
	case clusterdns.ZoneApex, clusterdns.SvcApex:
		return Answer{Rcode: NoError}
	case clusterdns.PodName:
		if strings.EqualFold(qname, "pod."+k.zone) {
			return Answer{Rcode: NoError}
		}
		ip, ok := podAddress(qname, k.zone)
		if !ok {
			return nxdomain
		}
		return k.addresses(qname, qtype, []string{ip}, "with pods insecure, as the Corefiles clusters run set")
	case clusterdns.NamespaceApex:
		if k.c.Namespace(n.Namespace) != nil {
			return Answer{Rcode: NoError, Note: "namespace apex"}
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
				return Answer{Rcode: NXDomain, Note: "headless Service without ready endpoints"}
			}
			return k.addresses(qname, qtype, addrs, "")
		case len(s.ClusterIPs) == 0:
			return Answer{Rcode: NoError, Records: []Record{{qname, qtype, "<cluster IP>"}}}
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
			return Answer{Rcode: NXDomain, Note: "answers " + strings.Join(e.Addrs, ", ") + " with endpoint_pod_names"}
		case len(e.Addrs) == 0:
			return Answer{Rcode: NoError, Records: []Record{{qname, qtype, "<endpoint address>"}}} // e.g. a StatefulSet's pod read offline
		}
		return k.addresses(qname, qtype, e.Addrs, "")
	}
	return nxdomain
}

// addresses answers the A or AAAA records of addrs; other questions of the name are NODATA.
func (k coreDNS) addresses(qname, qtype string, addrs []string, note string) Answer {
	a := Answer{Rcode: NoError, Note: note}
	if qtype != TypeA && qtype != TypeAAAA {
		return a
	}
	for _, s := range addrs {
		if ip, err := netip.ParseAddr(s); err == nil && ip.Is4() == (qtype == TypeA) {
			a.Records = append(a.Records, Record{qname, qtype, ip.String()})
		}
	}
	return a
}

// alias answers an ExternalName Service: a CNAME, and for addresses what the target answers.
func (k coreDNS) alias(qname, qtype, target string, depth int) Answer {
	cname := Record{qname, TypeCNAME, target}
	if qtype != TypeA && qtype != TypeAAAA {
		if qtype == TypeCNAME {
			return Answer{Rcode: NoError, Records: []Record{cname}}
		}
		return Answer{Rcode: NoError}
	}
	if target == qname || depth >= maxChain {
		return Answer{Rcode: NoError}
	}
	// Outside the zone, any answer from the upstream keeps the CNAME, even NXDOMAIN.
	t, ok := follow(target, qtype, k.zone, k.up, true, func(name string) Answer { return k.answer(name, qtype, depth+1) })
	if !ok {
		return Answer{Rcode: NoError}
	}
	return Answer{Rcode: NoError, Records: append([]Record{cname}, t.Records...)}
}

func appendNew(list []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(list, a) {
			list = append(list, a)
		}
	}
	return list
}
