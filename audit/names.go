package audit

import (
	"strings"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
)

// Names is what the checks read of a cluster: which namespaces exist and which Services,
// by name and by namespace. The offline model (from manifests or a one-off read of a
// cluster) and nsguard's live view both implement it, so that nsguard audit and the
// plugin's live findings run the same checks. Names are lower case.
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
// the names alone where they do not, as on the live view.
type Answerer interface {
	Answers(qname, zone string) (coredns, kubeDNS model.Answer)
}

// Ref is what the checks read of a Service.
type Ref struct {
	Namespace, Name string
	Alias           bool   // an ExternalName Service
	ExternalName    string // its target
	Source          string // where it was read
}

// offline is the model as the checks read it.
type offline struct{ c *model.Cluster }

func (o offline) Namespace(name string) (string, bool) {
	if ns := o.c.Namespace(name); ns != nil {
		return ns.Source, true
	}
	return "", false
}

func (o offline) Service(ns, name string) (Ref, bool) {
	if s := o.c.Service(ns, name); s != nil {
		return ref(s), true
	}
	return Ref{}, false
}

func (o offline) ServicesNamed(name string) []Ref { return refs(o.c.ServicesNamed(name)) }
func (o offline) ServicesIn(ns string) []Ref      { return refs(o.c.ServicesIn(ns)) }

func (o offline) Answers(qname, zone string) (model.Answer, model.Answer) {
	return o.c.CoreDNS(qname, model.TypeA, zone, nil), o.c.KubeDNS(qname, model.TypeA, zone, nil)
}

func ref(s *model.Service) Ref {
	return Ref{Namespace: s.Namespace, Name: s.Name, Alias: s.IsExternalName(), ExternalName: s.ExternalName, Source: s.Source}
}

func refs(list []*model.Service) []Ref {
	out := make([]Ref, len(list))
	for i, s := range list {
		out[i] = ref(s)
	}
	return out
}

// answers are what CoreDNS and kube-dns answer to an A question for name, when r knows.
func answers(r Names, name, zone string) (*model.Answer, *model.Answer) {
	a, ok := r.(Answerer)
	if !ok {
		return nil, nil
	}
	core, kube := a.Answers(name, zone)
	return &core, &kube
}

// homes returns the namespaces that hold a Service called name: first those whose Service
// is not an alias into zone, then the aliases.
func homes(r Names, name, zone string) (services, aliases []string) {
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
