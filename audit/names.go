package audit

import (
	"strings"

	"github.com/nsguard/nsguard/clusterdns"
)

// Names is what the checks read of a cluster: which namespaces exist and which Services,
// by name and by namespace. The offline model (package model: from manifests or a one-off
// read of a cluster) and nsguard's live view both implement it, so that nsguard audit and
// the plugin's live findings run the same checks. Names are lower case.
type Names interface {
	// Namespace reports whether namespace name exists, and where it was read.
	Namespace(name string) (source string, ok bool)
	// Service returns Service name of namespace ns.
	Service(ns, name string) (Ref, bool)
	// ServicesNamed returns the Services called name in every namespace, sorted by namespace.
	ServicesNamed(name string) []Ref
	// ServicesIn returns the Services of namespace ns, sorted by name.
	ServicesIn(ns string) []Ref
}

// Answerer is a Names that also knows what CoreDNS and kube-dns answer to an A question:
// the offline model does. The checks use the answers where they have them, and decide from
// the names alone where they do not, as on the live view: so the checks, and the plugin
// that runs them, need only the answers' type, not a model of cluster DNS.
type Answerer interface {
	Answers(qname, zone string) (coredns, kubeDNS clusterdns.Answer)
}

// Cluster is a whole cluster as Audit reads it: its names and answers, every namespace and
// Service, and the named endpoints of each Service. The offline model is one.
type Cluster interface {
	Names
	Answerer
	// AllNamespaces returns every namespace, sorted.
	AllNamespaces() []string
	// AllServices returns every Service, sorted by namespace and name.
	AllServices() []Ref
	// Endpoints returns the named endpoints of Service ns/service, sorted by name.
	Endpoints(ns, service string) []*clusterdns.Endpoint
}

// Ref is what the checks read of a Service.
type Ref struct {
	Namespace, Name string
	Alias           bool   // an ExternalName Service
	ExternalName    string // its target
	Source          string // where it was read
}

// answers are what CoreDNS and kube-dns answer to an A question for name, when r knows.
func answers(r Names, name, zone string) (*clusterdns.Answer, *clusterdns.Answer) {
	a, ok := r.(Answerer)
	if !ok {
		return nil, nil
	}
	core, kube := a.Answers(name, zone)
	return &core, &kube
}

// Homes returns the namespaces that hold a Service called name: first those whose Service
// is not an alias into zone, then the aliases.
func Homes(r Names, name, zone string) (services, aliases []string) {
	for _, s := range r.ServicesNamed(name) {
		if s.Alias && clusterdns.LeadsInto(s.ExternalName, []string{clusterdns.FQDN(zone)}) {
			aliases = append(aliases, s.Namespace)
		} else {
			services = append(services, s.Namespace)
		}
	}
	return services, aliases
}

// normalZone is the zone as the checks write it: lower case, without the trailing dot.
func normalZone(zone string) string { return strings.ToLower(strings.TrimSuffix(zone, ".")) }
