package audit

import (
	"net/netip"
	"sort"
	"strings"
)

// Cluster is the part of a cluster's state that cluster DNS answers from: namespaces,
// Services and the names of their endpoints. Names are kept in lower case.
type Cluster struct {
	namespaces map[string]*Namespace
	services   map[string]*Service   // "ns/name"
	byName     map[string][]*Service // Service name -> that Service in every namespace
	byNS       map[string][]*Service // namespace -> its Services
	endpoints  map[string]map[string]*Endpoint
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
	Source          string
}

// EndpointKind is how an endpoint got its DNS name; it decides who answers it.
type EndpointKind uint8

const (
	Hostname EndpointKind = iota // endpoint hostname: CoreDNS and kube-dns (headless) answer it
	DashedIP                     // 10-1-2-3: CoreDNS's name for an endpoint without a hostname
	PodName                      // CoreDNS answers it only with endpoint_pod_names
)

// Endpoint is one named endpoint of a Service.
type Endpoint struct {
	Name   string
	Kind   EndpointKind
	Addrs  []string
	Source string
}

// NewCluster returns an empty Cluster.
func NewCluster() *Cluster {
	return &Cluster{
		namespaces: map[string]*Namespace{},
		services:   map[string]*Service{},
		byName:     map[string][]*Service{},
		byNS:       map[string][]*Service{},
		endpoints:  map[string]map[string]*Endpoint{},
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
func (c *Cluster) AddEndpoint(ns, service string, e Endpoint) {
	key := strings.ToLower(ns) + "/" + strings.ToLower(service)
	e.Name = strings.ToLower(e.Name)
	m := c.endpoints[key]
	if m == nil {
		m = map[string]*Endpoint{}
		c.endpoints[key] = m
	}
	if old, ok := m[e.Name]; ok {
		if e.Kind < old.Kind { // a hostname is a stronger claim than a pod name
			old.Kind = e.Kind
		}
		old.Addrs = appendNew(old.Addrs, e.Addrs...)
		return
	}
	m[e.Name] = &e
}

// AddAddress records an endpoint address that has no hostname: CoreDNS names it by its dashed IP.
func (c *Cluster) AddAddress(ns, service, addr, source string) {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return
	}
	dashed := strings.NewReplacer(".", "-", ":", "-").Replace(a.StringExpanded())
	if a.Is4() {
		dashed = strings.ReplaceAll(a.String(), ".", "-")
	}
	c.AddEndpoint(ns, service, Endpoint{Name: dashed, Kind: DashedIP, Addrs: []string{addr}, Source: source})
}

func appendNew(list []string, add ...string) []string {
	for _, a := range add {
		found := false
		for _, l := range list {
			if l == a {
				found = true
				break
			}
		}
		if !found {
			list = append(list, a)
		}
	}
	return list
}

// Namespace returns the namespace called name, or nil.
func (c *Cluster) Namespace(name string) *Namespace { return c.namespaces[strings.ToLower(name)] }

// Service returns Service name in namespace ns, or nil.
func (c *Cluster) Service(ns, name string) *Service {
	return c.services[strings.ToLower(ns)+"/"+strings.ToLower(name)]
}

// Endpoint returns the endpoint called name of Service ns/service, or nil.
func (c *Cluster) Endpoint(ns, service, name string) *Endpoint {
	return c.endpoints[strings.ToLower(ns)+"/"+strings.ToLower(service)][strings.ToLower(name)]
}

// ServicesNamed returns the Services called name in every namespace, sorted by namespace.
func (c *Cluster) ServicesNamed(name string) []*Service {
	list := append([]*Service(nil), c.byName[strings.ToLower(name)]...)
	sort.Slice(list, func(i, j int) bool { return list[i].Namespace < list[j].Namespace })
	return list
}

// servicesIn returns the Services of namespace ns, sorted by name.
func (c *Cluster) servicesIn(ns string) []*Service {
	list := append([]*Service(nil), c.byNS[strings.ToLower(ns)]...)
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list
}

// Len returns the number of namespaces and Services.
func (c *Cluster) Len() (namespaces, services int) { return len(c.namespaces), len(c.services) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
