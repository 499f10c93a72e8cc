package model

import (
	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/clusterdns"
)

// Names is the cluster as nsguard audit's checks read it, with what CoreDNS and kube-dns
// answer: audit.Audit(c.Names(), zone) runs every check on it.
func (c *Cluster) Names() audit.Cluster { return offline{c} }

// offline is the model as the checks read it.
type offline struct{ c *Cluster }

func (o offline) Namespace(name string) (string, bool) {
	if ns := o.c.Namespace(name); ns != nil {
		return ns.Source, true
	}
	return "", false
}

func (o offline) Service(ns, name string) (audit.Ref, bool) {
	if s := o.c.Service(ns, name); s != nil {
		return ref(s), true
	}
	return audit.Ref{}, false
}

func (o offline) ServicesNamed(name string) []audit.Ref { return refs(o.c.ServicesNamed(name)) }
func (o offline) ServicesIn(ns string) []audit.Ref      { return refs(o.c.ServicesIn(ns)) }
func (o offline) AllServices() []audit.Ref              { return refs(o.c.Services()) }

func (o offline) AllNamespaces() []string {
	list := o.c.Namespaces()
	out := make([]string, len(list))
	for i, ns := range list {
		out[i] = ns.Name
	}
	return out
}

func (o offline) Endpoints(ns, service string) []*clusterdns.Endpoint {
	return o.c.Endpoints(ns, service)
}

func (o offline) Answers(qname, zone string) (clusterdns.Answer, clusterdns.Answer) {
	return o.c.CoreDNS(qname, clusterdns.TypeA, zone, nil), o.c.KubeDNS(qname, clusterdns.TypeA, zone, nil)
}

func ref(s *Service) audit.Ref {
	return audit.Ref{Namespace: s.Namespace, Name: s.Name, Alias: s.IsExternalName(), ExternalName: s.ExternalName, Source: s.Source}
}

func refs(list []*Service) []audit.Ref {
	out := make([]audit.Ref, len(list))
	for i, s := range list {
		out[i] = ref(s)
	}
	return out
}
