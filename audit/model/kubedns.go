package model

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/nsguard/nsguard/clusterdns"
)

// KubeDNS is kube-dns's answer to a qtype question for qname in zone; up answers the names
// outside the zone (nil: not known). kube-dns keeps a tree: each namespace's ExternalName
// Services are entries on the namespace's own node, every other Service is a node below
// it, and a name's answer is the entries of its node, in the order of a Go map:
//
//   - <ns>.svc.<zone> is answered by the namespace's ExternalName Services, so a namespace
//     holding several answers one CNAME, to one of them at random, with the addresses of
//     every target, shuffled; NXDOMAIN when it holds none;
//   - svc.<zone> and <zone> have no entries: NXDOMAIN;
//   - an alias whose target does not resolve adds nothing; an empty answer is NODATA;
//   - AAAA, TXT and other questions of a name that exists are NODATA, unless they find
//     records; a CNAME question finds only an ExternalName Service's own entry.
func (c *Cluster) KubeDNS(qname, qtype, zone string, up UpstreamResolver) clusterdns.Answer {
	return kubeDNS{c: c, zone: clusterdns.FQDN(zone), up: up}.answer(clusterdns.FQDN(qname), qtype, 0)
}

type kubeDNS struct {
	c    *Cluster
	zone string
	up   UpstreamResolver
}

// entry is one value in kube-dns's tree: an address, or a name to follow.
type entry struct {
	host string // an IP address, or a fully qualified name
	port int    // for SRV
	name string // for an address: the name an SRV answer gives it, <hostname or hash>.<service>
}

// maxChain bounds CNAME chains, as kube-dns and CoreDNS do.
const maxChain = 8

func (k kubeDNS) answer(qname, qtype string, depth int) clusterdns.Answer {
	if clusterdns.MatchZone(qname, []string{k.zone}) == "" {
		return upstream(k.up, qname, qtype)
	}
	entries, found := k.lookup(qname)
	switch {
	case !found:
		return nxdomain
	case qtype == clusterdns.TypeA || qtype == clusterdns.TypeAAAA:
		return k.addresses(qname, qtype, entries, depth)
	case qtype == clusterdns.TypeSRV:
		return k.srv(qname, entries, depth)
	case qtype == clusterdns.TypeCNAME:
		return k.cname(qname)
	}
	return clusterdns.Answer{Rcode: clusterdns.NoError} // only SRV and address questions take these entries
}

// lookup returns the entries kube-dns answers qname with, or false for NXDOMAIN.
func (k kubeDNS) lookup(qname string) ([]entry, bool) {
	n := clusterdns.ClassifyIn(qname, k.zone)
	var out []entry
	switch n.Shape {
	case clusterdns.NamespaceApex:
		for _, s := range k.c.ServicesIn(n.Namespace) {
			if s.IsExternalName() {
				out = append(out, entry{host: clusterdns.FQDN(s.ExternalName)})
			}
		}
	case clusterdns.ServiceName:
		s := k.c.Service(n.Namespace, n.Service)
		switch {
		case s == nil:
		case s.IsExternalName():
			out = append(out, entry{host: clusterdns.FQDN(s.ExternalName)})
		case s.Headless:
			out = k.endpoints(s, "")
		default:
			for _, ip := range s.ClusterIPs {
				out = append(out, entry{host: ip, name: "<hash>." + k.fqdn(s)})
			}
		}
	case clusterdns.EndpointName:
		s := k.c.Service(n.Namespace, n.Service)
		switch {
		case s == nil || s.IsExternalName():
		case strings.HasPrefix(n.Endpoint, "_"):
			out = k.ports(s, strings.ToLower(n.Endpoint))
		case s.Headless:
			out = k.endpoints(s, strings.ToLower(n.Endpoint))
		}
	case clusterdns.PodName:
		if ip, ok := podAddress(qname, k.zone); ok {
			out = append(out, entry{host: ip})
		}
	}
	return out, len(out) > 0
}

// endpoints are a headless Service's entries, keyed by hostname or by a hash; name picks one.
func (k kubeDNS) endpoints(s *Service, name string) []entry {
	var out []entry
	for _, e := range k.c.Endpoints(s.Namespace, s.Name) {
		key := "<hash>" // kube-dns names an endpoint without a hostname by a hash of its record
		switch {
		case e.Kind == clusterdns.EndpointHostname:
			key = e.Name
		case e.Kind == clusterdns.EndpointPodName:
			continue // the same address is also there by its dashed name
		case name != "":
			continue // only a hostname is a label under the Service
		}
		if name != "" && key != name {
			continue
		}
		for _, a := range e.Addrs {
			out = append(out, entry{host: a, name: key + "." + k.fqdn(s)})
		}
		if len(e.Addrs) == 0 { // e.g. a StatefulSet's pod read offline
			out = append(out, entry{host: "<endpoint address>", name: key + "." + k.fqdn(s)})
		}
	}
	return out
}

// ports are the entries of _port._proto under a Service: kube-dns keeps ports with a name
// and a protocol.
func (k kubeDNS) ports(s *Service, label string) []entry {
	var out []entry
	for _, p := range s.Ports {
		if p.Name == "" || p.Protocol == "" || label != "_"+strings.ToLower(p.Name)+"._"+strings.ToLower(p.Protocol) {
			continue
		}
		if !s.Headless {
			out = append(out, entry{host: k.fqdn(s), port: p.Port})
			continue
		}
		for _, e := range k.endpoints(s, "") {
			out = append(out, entry{host: e.name, port: p.Port})
		}
	}
	return out
}

// addresses answers an A or AAAA question: addresses as they are, names followed, and of
// several CNAMEs kube-dns keeps one, the last of a Go map's order, so any of them.
func (k kubeDNS) addresses(qname, qtype string, entries []entry, depth int) clusterdns.Answer {
	var recs []clusterdns.Record
	var cnames []string
	for _, e := range entries {
		if ip, err := netip.ParseAddr(e.host); err == nil {
			if ip.Is4() == (qtype == clusterdns.TypeA) {
				recs = append(recs, clusterdns.Record{Owner: qname, Type: qtype, Data: ip.String()})
			}
			continue
		}
		if strings.HasPrefix(e.host, "<") { // an address not known here
			recs = append(recs, clusterdns.Record{Owner: qname, Type: qtype, Data: e.host})
			continue
		}
		if e.host == qname || depth >= maxChain || slices.Contains(cnames, e.host) {
			continue
		}
		t, ok := follow(e.host, qtype, k.zone, k.up, false, func(name string) clusterdns.Answer { return k.answer(name, qtype, depth+1) })
		if !ok {
			continue
		}
		cnames = append(cnames, e.host)
		recs = appendNewRecords(recs, t.Records...)
	}
	a := clusterdns.Answer{Rcode: clusterdns.NoError, Shuffled: len(entries) > 1 && len(cnames)+len(recs) > 1}
	switch len(cnames) {
	case 0:
		a.Records = recs
	case 1:
		a.Records = append([]clusterdns.Record{{Owner: qname, Type: clusterdns.TypeCNAME, Data: cnames[0]}}, recs...)
	default:
		a.CNAMEOneOf, a.Records = cnames, recs
	}
	return a
}

// srv answers an SRV question: one record per entry, priority 10 and weights that add up
// to about 100, with the targets' addresses in the additional section.
func (k kubeDNS) srv(qname string, entries []entry, depth int) clusterdns.Answer {
	a := clusterdns.Answer{Rcode: clusterdns.NoError, Shuffled: len(entries) > 1}
	weight := strconv.Itoa(100 / len(entries))
	for _, e := range entries {
		target := e.host
		if ip, err := netip.ParseAddr(e.host); err == nil {
			target = e.name
			a.Additional = append(a.Additional, clusterdns.Record{Owner: target, Type: map[bool]string{true: clusterdns.TypeA, false: clusterdns.TypeAAAA}[ip.Is4()], Data: ip.String()})
		} else {
			for _, qtype := range []string{clusterdns.TypeA, clusterdns.TypeAAAA} {
				t, _ := follow(target, qtype, k.zone, k.up, false, func(name string) clusterdns.Answer { return k.answer(name, qtype, depth+1) })
				a.Additional = appendNewRecords(a.Additional, t.Records...)
			}
		}
		a.Records = append(a.Records, clusterdns.Record{Owner: qname, Type: clusterdns.TypeSRV, Data: "10 " + weight + " " + strconv.Itoa(e.port) + " " + target})
	}
	return a
}

// cname answers a CNAME question: only an ExternalName Service's own entry is found.
func (k kubeDNS) cname(qname string) clusterdns.Answer {
	n := clusterdns.ClassifyIn(qname, k.zone)
	if n.Shape == clusterdns.ServiceName {
		if s := k.c.Service(n.Namespace, n.Service); s != nil && s.IsExternalName() {
			return clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{{Owner: qname, Type: clusterdns.TypeCNAME, Data: clusterdns.FQDN(s.ExternalName)}}}
		}
	}
	return nxdomain
}

// follow resolves the target of a CNAME: in the zone by the model itself, which keeps the
// CNAME only when the target has records; outside it through the upstream, where a NOERROR
// keeps the CNAME even without records, and so does any answer when anyAnswer is set (as
// CoreDNS does; kube-dns drops it on an error). ok is false when the CNAME is left out.
func follow(target, qtype, zone string, up UpstreamResolver, anyAnswer bool, inZone func(string) clusterdns.Answer) (clusterdns.Answer, bool) {
	if clusterdns.MatchZone(target, []string{zone}) != "" {
		t := inZone(target)
		return t, t.Rcode == clusterdns.NoError && len(t.Records) > 0
	}
	t := upstream(up, target, qtype)
	switch {
	case t.Rcode == clusterdns.Upstream: // not known here: say what it hangs on
		return clusterdns.Answer{Rcode: clusterdns.NoError, Records: []clusterdns.Record{{Owner: target, Type: qtype, Data: "<" + target + " from the upstream, if it resolves>"}}}, true
	case t.Rcode == clusterdns.NoError:
		return t, true
	}
	return clusterdns.Answer{Rcode: clusterdns.NoError}, anyAnswer
}

// fqdn is the name of Service s.
func (k kubeDNS) fqdn(s *Service) string { return s.Name + "." + s.Namespace + ".svc." + k.zone }

// podAddress reads the dashed address of <a-b-c-d>.<ns>.pod.<zone>.
func podAddress(qname, zone string) (string, bool) {
	labels := strings.Split(strings.TrimSuffix(clusterdns.BelowZone(qname, zone), "."), ".")
	if len(labels) != 3 || !clusterdns.EqualFold(labels[2], "pod") {
		return "", false
	}
	ip, err := netip.ParseAddr(strings.ReplaceAll(labels[0], "-", "."))
	if err != nil || !ip.Is4() {
		return "", false
	}
	return ip.String(), true
}

func appendNewRecords(recs []clusterdns.Record, add ...clusterdns.Record) []clusterdns.Record {
	for _, r := range add {
		if !slices.Contains(recs, r) {
			recs = append(recs, r)
		}
	}
	return recs
}
