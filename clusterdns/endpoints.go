package clusterdns

import "strings"

// EndpointKind is how an endpoint got its DNS name; it decides who answers it.
type EndpointKind uint8

const (
	EndpointHostname EndpointKind = iota // the endpoint's hostname: CoreDNS, and kube-dns for headless Services
	EndpointDashedIP                     // 10-1-2-3: CoreDNS's name for an endpoint without a hostname
	EndpointPodName                      // the target Pod's name: CoreDNS with endpoint_pod_names, in place of the dashed IP
)

// Endpoint is one named endpoint of a Service.
type Endpoint struct {
	Name   string
	Kind   EndpointKind
	Addrs  []string
	Source string
}

// SliceEndpoint is what cluster DNS reads of one endpoint of an EndpointSlice, or of one
// address of a v1 Endpoints subset.
type SliceEndpoint struct {
	Hostname  string
	PodName   string // the target's name, when targetRef is a Pod
	Addresses []string
	Ready     *bool // nil means ready, as the API documents
}

// Names returns the names cluster DNS gives e, in lower case, as CoreDNS's kubernetes
// plugin does: none when e is not ready; its hostname when it has one; otherwise each
// address dashed and, for endpoint_pod_names, its Pod's name (up to 63 octets).
func (e SliceEndpoint) Names() []Endpoint {
	if e.Ready != nil && !*e.Ready {
		return nil
	}
	if e.Hostname != "" {
		return []Endpoint{{Name: strings.ToLower(e.Hostname), Kind: EndpointHostname, Addrs: e.Addresses}}
	}
	var out []Endpoint
	if e.PodName != "" && len(e.PodName) < 64 {
		out = append(out, Endpoint{Name: strings.ToLower(e.PodName), Kind: EndpointPodName, Addrs: e.Addresses})
	}
	for _, a := range e.Addresses {
		if d := dashedAddress(a); d != "" {
			out = append(out, Endpoint{Name: d, Kind: EndpointDashedIP, Addrs: []string{a}})
		}
	}
	return out
}

// dashedAddress is the label CoreDNS makes of an address: dots or colons become dashes,
// and a trailing dash of an IPv6 address gets a 0.
func dashedAddress(a string) string {
	switch {
	case strings.Contains(a, "."):
		return strings.ReplaceAll(a, ".", "-")
	case strings.Contains(a, ":"):
		d := strings.ReplaceAll(strings.ToLower(a), ":", "-")
		if strings.HasSuffix(d, "-") {
			d += "0"
		}
		return d
	}
	return ""
}
