// Package clusterdns is the grammar of Kubernetes cluster DNS names: how a name below a
// cluster zone reads (namespace apex, Service, endpoint), the labels Kubernetes allows, and
// the advice a log line gives, and the type of an answer (Answer) that the checks and the
// offline model share. Its readers do not allocate, so the query path uses them.
package clusterdns

import "strings"

// Shape is what Kubernetes cluster DNS reads a name as, relative to its zone.
type Shape uint8

// The shapes of names under a cluster zone Z, as the CoreDNS kubernetes plugin and kube-dns read them.
const (
	OutOfZone     Shape = iota // not under any zone
	ZoneApex                   // Z
	SvcApex                    // svc.Z
	NamespaceApex              // <ns>.svc.Z: the search-path trap
	ServiceName                // <svc>.<ns>.svc.Z
	EndpointName               // <endpoint>.<svc>.<ns>.svc.Z, and SRV names under a Service
	PodName                    // pod.Z and below
	Other                      // any other name in Z; cluster DNS answers NXDOMAIN
)

var shapeNames = [...]string{
	OutOfZone:     "out-of-zone",
	ZoneApex:      "zone-apex",
	SvcApex:       "svc-apex",
	NamespaceApex: "namespace-apex",
	ServiceName:   "service",
	EndpointName:  "endpoint",
	PodName:       "pod",
	Other:         "other",
}

func (s Shape) String() string {
	if int(s) < len(shapeNames) {
		return shapeNames[s]
	}
	return "unknown"
}

// Name is a question name split the way cluster DNS reads it. Labels are slices of
// the question, so they keep the client's case; compare them with strings.EqualFold.
type Name struct {
	Shape     Shape
	Zone      string // the matching zone, as configured
	Namespace string // for NamespaceApex, ServiceName and EndpointName
	Service   string // for ServiceName and EndpointName
	Endpoint  string // for EndpointName: the labels left of the Service (an endpoint, or _port._proto)
}

// Classify reads qname (presentation format, fully qualified) against zones (lower case,
// fully qualified) and picks the longest zone that holds it. It does not allocate.
func Classify(qname string, zones []string) Name {
	return ClassifyIn(qname, MatchZone(qname, zones))
}

// ClassifyIn is Classify once the zone is known ("" when none holds qname).
func ClassifyIn(qname, zone string) Name {
	if zone == "" {
		return Name{Shape: OutOfZone}
	}
	n := Name{Zone: zone, Shape: Other}
	rest := BelowZone(qname, zone)
	if rest == "" {
		n.Shape = ZoneApex
		return n
	}

	// Up to six labels, right to left: kind (svc/pod), then namespace, service and the rest.
	var labels [6]string
	count := 0
	left := rest
	for rest != "" && count < len(labels) {
		var l string
		rest, l = lastLabel(rest)
		if l == "" {
			return n // an empty label: not a name cluster DNS defines
		}
		labels[count] = l
		count++
	}
	if rest != "" {
		return n // deeper than any name cluster DNS defines
	}

	switch {
	case EqualFold(labels[0], "pod"):
		n.Shape = PodName
		return n
	case !EqualFold(labels[0], "svc"):
		return n
	}

	switch count {
	case 1:
		n.Shape = SvcApex
	case 2:
		if IsDNSLabel(labels[1]) {
			n.Shape, n.Namespace = NamespaceApex, labels[1]
		}
	case 3, 4, 5:
		if !IsDNSLabel(labels[1]) || !IsDNSLabel(labels[2]) {
			return n
		}
		n.Namespace, n.Service = labels[1], labels[2]
		if count == 3 {
			n.Shape = ServiceName
			return n
		}
		// Endpoint names are one label; SRV port names are _port._proto or _proto.
		n.Endpoint = left[:len(left)-len(labels[0])-len(labels[1])-len(labels[2])-4]
		if count == 5 && (labels[3][0] != '_' || labels[4][0] != '_') {
			return Name{Zone: zone, Shape: Other}
		}
		n.Shape = EndpointName
	}
	return n
}

// EndpointIn cuts qname, below zone, into the labels of an endpoint name
// <endpoint>.<service>.<namespace>.svc.<zone> by position, without reading them further.
// It is the quick way to look such a name up in sets of Kubernetes names: a label that is
// not one (in upper case, say) is simply not found there. Whenever ClassifyIn reads a name
// as an EndpointName of one label, EndpointIn cuts it into the same labels; names with
// escapes it leaves to ClassifyIn.
func EndpointIn(qname, zone string) (Name, bool) {
	if zone == "" {
		return Name{}, false
	}
	rest := BelowZone(qname, zone)
	var cut [4]int // the dot that ends each label
	start := 0
	for i := range cut {
		j := strings.IndexByte(rest[start:], '.')
		if j <= 0 {
			return Name{}, false // fewer labels, or an empty one
		}
		cut[i] = start + j
		start = cut[i] + 1
	}
	if start != len(rest) || !EqualFold(rest[cut[2]+1:cut[3]], "svc") || strings.IndexByte(rest, '\\') >= 0 {
		return Name{}, false
	}
	return Name{Shape: EndpointName, Zone: zone, Endpoint: rest[:cut[0]], Service: rest[cut[0]+1 : cut[1]],
		Namespace: rest[cut[1]+1 : cut[2]]}, true
}

// BelowZone returns the labels of qname left of zone, each with its trailing dot.
func BelowZone(qname, zone string) string {
	if zone == "." {
		if qname == "." {
			return ""
		}
		return qname // the root's dot also ends the last label
	}
	return qname[:len(qname)-len(zone)]
}

// MatchZone returns the longest zone that qname is equal to or below, or "".
func MatchZone(qname string, zones []string) string {
	best := ""
	for _, z := range zones {
		if len(z) <= len(best) || len(qname) < len(z) {
			continue
		}
		if !EqualFold(qname[len(qname)-len(z):], z) {
			continue
		}
		if z == "." || len(qname) == len(z) || isLabelEnd(qname, len(qname)-len(z)-1) {
			best = z
		}
	}
	return best
}

// lastLabel splits off the rightmost label of s, which ends in an unescaped dot.
func lastLabel(s string) (rest, label string) {
	end := len(s) - 1 // the trailing dot
	for i := end - 1; i >= 0; i-- {
		if s[i] == '.' && isLabelEnd(s, i) {
			return s[:i+1], s[i+1 : end]
		}
	}
	return "", s[:end]
}

// isLabelEnd reports whether the dot at s[i] ends a label, that is, it is not escaped.
func isLabelEnd(s string, i int) bool {
	if s[i] != '.' {
		return false
	}
	backslashes := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		backslashes++
	}
	return backslashes%2 == 0
}

// EqualFold is strings.EqualFold for DNS names: ASCII letters only, so it never decodes UTF-8.
// It inlines: the common cases cost no frame of their own, which a query's stack, when it
// grows there, would have to copy.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	return a == b || equalFoldASCII(a, b) // equal as given, compared a word at a time
}

// equalFoldASCII compares a and b, of one length, byte by byte. Kept out of line, so that
// EqualFold stays small enough to inline.
//
//go:noinline
func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x != y && lowerASCII(x) != lowerASCII(y) {
			return false
		}
	}
	return true
}

// FQDN returns name in lower case and fully qualified.
func FQDN(name string) string {
	if strings.HasSuffix(name, ".") {
		return strings.ToLower(name)
	}
	return strings.ToLower(name) + "."
}

// LeadsInto reports whether an ExternalName target is a name in one of zones: the Service
// is then an alias of another in the cluster, which advice names in its place.
func LeadsInto(externalName string, zones []string) bool {
	return externalName != "" && MatchZone(FQDN(externalName), zones) != ""
}
