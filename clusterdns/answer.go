package clusterdns

import (
	"net/netip"
	"slices"
	"strings"
)

// Rcodes of an Answer. Upstream stands for a name outside the cluster zone: cluster DNS
// forwards it, so what comes back is not known from the cluster's state.
const (
	NoError  = "NOERROR"
	NXDomain = "NXDOMAIN"
	Upstream = "UPSTREAM"
)

// Answer is what cluster DNS answers to an A question for a name.
type Answer struct {
	Rcode   string   `json:"rcode"`
	Records []string `json:"records,omitempty"` // "A 10.96.0.20", "CNAME x.example.net."
	Note    string   `json:"note,omitempty"`
}

// HasRecords reports an answer that a stub resolver takes: NOERROR with records.
func (a Answer) HasRecords() bool { return a.Rcode == NoError && len(a.Records) > 0 }

// NoData reports NOERROR without records.
func (a Answer) NoData() bool { return a.Rcode == NoError && len(a.Records) == 0 }

func (a Answer) String() string {
	switch {
	case a.Rcode == Upstream:
		return "upstream"
	case a.NoData():
		return "NODATA"
	case a.Rcode == NoError:
		return strings.Join(a.Records, ", ")
	}
	return a.Rcode
}

// zoneList turns "cluster.local" into the fully qualified, lower-case list Classify takes.
func zoneList(zone string) []string { return []string{FQDN(zone)} }

// FQDN returns name in lower case and fully qualified.
func FQDN(name string) string {
	if strings.HasSuffix(name, ".") {
		return strings.ToLower(name)
	}
	return strings.ToLower(name) + "."
}

var nxdomain = Answer{Rcode: NXDomain}

// CoreDNS is the answer of CoreDNS's kubernetes plugin (default options: pods disabled,
// no endpoint_pod_names) to an A question for qname (fully qualified).
func (c *Cluster) CoreDNS(qname string, zone string) Answer {
	n := Classify(FQDN(qname), zoneList(zone))
	switch n.Shape {
	case OutOfZone:
		return Answer{Rcode: Upstream}
	case ZoneApex, SvcApex:
		return Answer{Rcode: NoError}
	case PodName:
		if strings.EqualFold(FQDN(qname), "pod."+zoneList(zone)[0]) {
			return Answer{Rcode: NoError}
		}
		return Answer{Rcode: NXDomain, Note: "pod names answer only with 'pods insecure' or 'pods verified'"}
	case NamespaceApex:
		if c.Namespace(n.Namespace) != nil {
			return Answer{Rcode: NoError, Note: "namespace apex"}
		}
		return nxdomain
	case ServiceName:
		s := c.Service(n.Namespace, n.Service)
		if s == nil {
			return nxdomain
		}
		return c.serviceAnswer(s)
	case EndpointName:
		s := c.Service(n.Namespace, n.Service)
		if s == nil || s.Type == "ExternalName" || strings.HasPrefix(n.Endpoint, "_") {
			return nxdomain // ExternalName Services have no endpoint names (coredns#5734)
		}
		e := c.Endpoint(n.Namespace, n.Service, n.Endpoint)
		if e == nil {
			return nxdomain
		}
		if e.Kind == EndpointPodName {
			return Answer{Rcode: NXDomain, Note: "answers " + strings.Join(aRecords(e.Addrs), ", ") + " with endpoint_pod_names"}
		}
		return Answer{Rcode: NoError, Records: aRecords(e.Addrs)}
	}
	return nxdomain
}

// KubeDNS is kube-dns's answer to an A question for qname.
func (c *Cluster) KubeDNS(qname string, zone string) Answer {
	n := Classify(FQDN(qname), zoneList(zone))
	switch n.Shape {
	case NamespaceApex:
		// ExternalName Services are stored on the namespace's node of kube-dns's tree.
		var recs []string
		for _, s := range c.ServicesIn(n.Namespace) {
			if s.Type == "ExternalName" {
				recs = append(recs, "CNAME "+FQDN(s.ExternalName))
			}
		}
		if len(recs) == 0 {
			return nxdomain
		}
		a := Answer{Rcode: NoError, Records: recs, Note: "the ExternalName Services of namespace " + n.Namespace}
		if len(recs) > 1 {
			a.Note += "; one CNAME and the addresses of every target, in random order"
		}
		return a
	case EndpointName:
		s := c.Service(n.Namespace, n.Service)
		e := c.Endpoint(n.Namespace, n.Service, n.Endpoint)
		if s == nil || !s.Headless || e == nil || e.Kind != EndpointHostname {
			return nxdomain // kube-dns names only the hostnames of headless Services' endpoints
		}
		return Answer{Rcode: NoError, Records: aRecords(e.Addrs)}
	case PodName:
		return Answer{Rcode: NXDomain, Note: "kube-dns answers dashed pod IPs under pod." + strings.TrimSuffix(zoneList(zone)[0], ".")}
	}
	return c.CoreDNS(qname, zone)
}

func (c *Cluster) serviceAnswer(s *Service) Answer {
	switch {
	case s.Type == "ExternalName":
		return Answer{Rcode: NoError, Records: []string{"CNAME " + FQDN(s.ExternalName)}}
	case s.Headless:
		var addrs []string
		for _, e := range c.Endpoints(s.Namespace, s.Name) {
			for _, a := range e.Addrs {
				if !slices.Contains(addrs, a) {
					addrs = append(addrs, a)
				}
			}
		}
		if len(addrs) == 0 {
			return Answer{Rcode: NXDomain, Note: "headless Service without ready endpoints"}
		}
		return Answer{Rcode: NoError, Records: aRecords(addrs)}
	case len(s.ClusterIPs) == 0:
		return Answer{Rcode: NoError, Records: []string{"A <cluster IP>"}}
	}
	return Answer{Rcode: NoError, Records: aRecords(s.ClusterIPs)}
}

// aRecords shows addresses as the records an A question gets; IPv6 ones would be AAAA.
func aRecords(addrs []string) []string {
	var recs []string
	for _, a := range addrs {
		if ip, err := netip.ParseAddr(a); err == nil && ip.Is4() {
			recs = append(recs, "A "+a)
		}
	}
	if len(recs) == 0 {
		recs = []string{"A <endpoint address>"} // e.g. a StatefulSet's pod read offline
	}
	return recs
}
