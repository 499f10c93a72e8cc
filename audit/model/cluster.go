// Package model is the offline picture of a cluster that nsguard audit and explain read:
// namespaces, Services and their endpoints, loaded from manifests or a live cluster, what
// CoreDNS's kubernetes plugin and kube-dns answer from them, and where each stub resolver's
// search ends (Explain). Only the CLI links it: the plugin runs package audit's checks on
// its live view. The name grammar and the answers' type are package clusterdns's, which the
// query path shares.
//
// nsguard explain --output json prints an Explanation as JSON, with what each of glibc,
// musl, Go and c-ares (as of CAresVersion) gets in corednsOutcome.resolvers and
// kubeDNSOutcome.resolvers; orNext is where c-ares's search ends when it goes on past an
// answer whose address came before its CNAME. With --mode refuse, refuse is nsguard's rcode
// and the candidates' answers are those it gives.
package model

import (
	"slices"
	"strings"

	"github.com/nsguard/nsguard/clusterdns"
)

// Cluster is the part of a cluster's state that cluster DNS answers from: namespaces,
// Services and the names of their endpoints. Names are kept in lower case.
type Cluster struct {
	namespaces map[string]*Namespace
	services   map[string]*Service   // "ns/name"
	byName     map[string][]*Service // Service name -> that Service in every namespace
	byNS       map[string][]*Service // namespace -> its Services
	endpoints  map[string]map[string]*clusterdns.Endpoint
}

// Namespace is a namespace, and where it was read from.
type Namespace struct {
	Name   string
	Source string // "file: document N", "live", or "implied by ..." for one only named by other objects
}

// Service is what DNS needs of a Service.
type Service struct {
	Namespace, Name string
	Type            string // ClusterIP, NodePort, LoadBalancer or ExternalName
	ExternalName    string
	Headless        bool
	ClusterIPs      []string
	Ports           []Port
	Source          string
}

// Port is a named port of a Service: cluster DNS answers SRV questions for _name._proto.
type Port struct {
	Name     string
	Protocol string // TCP, UDP or SCTP
	Port     int
}

// IsExternalName reports an alias: a Service that cluster DNS answers with a CNAME.
func (s *Service) IsExternalName() bool { return s.Type == "ExternalName" }

// NewCluster returns an empty Cluster.
func NewCluster() *Cluster {
	return &Cluster{
		namespaces: map[string]*Namespace{},
		services:   map[string]*Service{},
		byName:     map[string][]*Service{},
		byNS:       map[string][]*Service{},
		endpoints:  map[string]map[string]*clusterdns.Endpoint{},
	}
}

// AddNamespace records namespace name; a later explicit source replaces an implied one.
func (c *Cluster) AddNamespace(name, source string) {
	name = strings.ToLower(name)
	if ns, ok := c.namespaces[name]; ok {
		if strings.HasPrefix(ns.Source, "implied") && !strings.HasPrefix(source, "implied") {
			ns.Source = source
		}
		return
	}
	c.namespaces[name] = &Namespace{Name: name, Source: source}
}

// AddService records s, replacing a Service of the same namespace and name. Its
// namespace is implied: a Service cannot exist without one.
func (c *Cluster) AddService(s Service) {
	s.Namespace, s.Name = strings.ToLower(s.Namespace), strings.ToLower(s.Name)
	if s.Type == "" {
		s.Type = "ClusterIP"
	}
	c.AddNamespace(s.Namespace, "implied by Service "+s.Namespace+"/"+s.Name)
	key := s.Namespace + "/" + s.Name
	if old, ok := c.services[key]; ok {
		*old = s
		return
	}
	p := &s
	c.services[key] = p
	c.byName[s.Name] = append(c.byName[s.Name], p)
	c.byNS[s.Namespace] = append(c.byNS[s.Namespace], p)
}

// AddEndpoint records an endpoint name of Service ns/service with its addresses.
func (c *Cluster) AddEndpoint(ns, service string, e clusterdns.Endpoint) {
	key := strings.ToLower(ns) + "/" + strings.ToLower(service)
	e.Name = strings.ToLower(e.Name)
	m := c.endpoints[key]
	if m == nil {
		m = map[string]*clusterdns.Endpoint{}
		c.endpoints[key] = m
	}
	if old, ok := m[e.Name]; ok {
		if e.Kind < old.Kind { // a hostname is a stronger claim than a pod name
			old.Kind = e.Kind
		}
		for _, a := range e.Addrs {
			if !slices.Contains(old.Addrs, a) {
				old.Addrs = append(old.Addrs, a)
			}
		}
		return
	}
	m[e.Name] = &e
}

// AddSliceEndpoint records the names cluster DNS gives one endpoint of Service ns/service.
func (c *Cluster) AddSliceEndpoint(ns, service string, e clusterdns.SliceEndpoint, source string) {
	for _, n := range e.Names() {
		n.Source = source
		c.AddEndpoint(ns, service, n)
	}
}

// Namespace returns the namespace called name, or nil.
func (c *Cluster) Namespace(name string) *Namespace { return c.namespaces[strings.ToLower(name)] }

// Service returns Service name in namespace ns, or nil.
func (c *Cluster) Service(ns, name string) *Service {
	return c.services[strings.ToLower(ns)+"/"+strings.ToLower(name)]
}

// Endpoint returns the endpoint called name of Service ns/service, or nil.
func (c *Cluster) Endpoint(ns, service, name string) *clusterdns.Endpoint {
	return c.endpoints[strings.ToLower(ns)+"/"+strings.ToLower(service)][strings.ToLower(name)]
}

// Namespaces returns every namespace, sorted by name.
func (c *Cluster) Namespaces() []*Namespace { return sortedValues(c.namespaces) }

// Services returns every Service, sorted by namespace and name.
func (c *Cluster) Services() []*Service { return sortedValues(c.services) }

// ServicesNamed returns the Services called name in every namespace, sorted by namespace.
func (c *Cluster) ServicesNamed(name string) []*Service {
	list := slices.Clone(c.byName[strings.ToLower(name)])
	slices.SortFunc(list, func(a, b *Service) int { return strings.Compare(a.Namespace, b.Namespace) })
	return list
}

// ServicesIn returns the Services of namespace ns, sorted by name.
func (c *Cluster) ServicesIn(ns string) []*Service {
	list := slices.Clone(c.byNS[strings.ToLower(ns)])
	slices.SortFunc(list, func(a, b *Service) int { return strings.Compare(a.Name, b.Name) })
	return list
}

// Endpoints returns the named endpoints of Service ns/service, sorted by name.
func (c *Cluster) Endpoints(ns, service string) []*clusterdns.Endpoint {
	return sortedValues(c.endpoints[strings.ToLower(ns)+"/"+strings.ToLower(service)])
}

// Len returns the number of namespaces and Services.
func (c *Cluster) Len() (namespaces, services int) { return len(c.namespaces), len(c.services) }

func sortedValues[V any](m map[string]V) []V {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}
