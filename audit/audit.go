package audit

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
)

// Severity orders findings; --fail-on compares against it.
type Severity string

const (
	Info    Severity = "info"
	Warning Severity = "warning"
	Error   Severity = "error"
)

// Rank is 1 for info, 2 for warning, 3 for error, 0 for anything else.
func (s Severity) Rank() int {
	switch s {
	case Info:
		return 1
	case Warning:
		return 2
	case Error:
		return 3
	}
	return 0
}

// The checks Audit runs.
const (
	CheckNamespaceCapture = "namespace-captures-service"
	CheckEndpointShadow   = "endpoint-shadows-service"
	CheckAliasNamespace   = "alias-through-namespace"
	CheckAliasDangling    = "alias-dangling"
	CheckAliasLoop        = "alias-loop"
	CheckReserved         = "reserved-namespace"
	CheckApexAnswers      = "namespace-apex-answers"
)

// Object names one Kubernetes object of a finding and where it was read.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Source    string `json:"source,omitempty"`
}

func (o Object) String() string {
	if o.Namespace != "" {
		return o.Kind + " " + o.Namespace + "/" + o.Name
	}
	return o.Kind + " " + o.Name
}

// Clients are the namespaces whose pods are affected. Scope is "all", "all-except"
// (every namespace but Namespaces) or "only" (just Namespaces).
type Clients struct {
	Scope      string   `json:"scope"`
	Namespaces []string `json:"namespaces,omitempty"`
}

func (c Clients) String() string {
	switch c.Scope {
	case "all":
		return "every namespace"
	case "all-except":
		return "every namespace except " + strings.Join(c.Namespaces, ", ")
	}
	return strings.Join(c.Namespaces, ", ")
}

// Finding is one problem Audit found.
type Finding struct {
	Check    string        `json:"check"`
	Severity Severity      `json:"severity"`
	Message  string        `json:"message"`
	Objects  []Object      `json:"objects"`
	Clients  Clients       `json:"clients"`
	Name     string        `json:"name,omitempty"` // the DNS name that answers wrongly
	CoreDNS  *model.Answer `json:"coredns,omitempty"`
	KubeDNS  *model.Answer `json:"kubeDNS,omitempty"`
	Fix      string        `json:"fix"`
}

// Audit runs every check on c for the cluster zone (e.g. "cluster.local") and returns
// the findings, most severe first, in a stable order.
func Audit(c *model.Cluster, zone string) []Finding {
	zone = strings.ToLower(strings.TrimSuffix(zone, "."))
	var out []Finding
	out = append(out, namespaceCaptures(c, zone)...)
	out = append(out, apexAnswers(c, zone)...)
	out = append(out, endpointShadows(c, zone)...)
	out = append(out, aliases(c, zone)...)
	out = append(out, reserved(c, zone)...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Severity.Rank() != b.Severity.Rank() {
			return a.Severity.Rank() > b.Severity.Rank()
		}
		if a.Check != b.Check {
			return a.Check < b.Check
		}
		return a.Message < b.Message
	})
	return out
}

func nsObject(n *model.Namespace) Object {
	return Object{Kind: "Namespace", Name: n.Name, Source: n.Source}
}
func svcObject(s *model.Service) Object {
	return Object{Kind: "Service", Namespace: s.Namespace, Name: s.Name, Source: s.Source}
}

// answers are what CoreDNS and kube-dns answer to an A question for name.
func answers(c *model.Cluster, name, zone string) (*model.Answer, *model.Answer) {
	core, kube := c.CoreDNS(name, model.TypeA, zone, nil), c.KubeDNS(name, model.TypeA, zone, nil)
	return &core, &kube
}

// namespaceCaptures: namespace N and Service N in another namespace D. A client outside D
// that types N sends N.svc.<zone> second, and gets the namespace.
func namespaceCaptures(c *model.Cluster, zone string) []Finding {
	var out []Finding
	for _, ns := range c.Namespaces() {
		name := ns.Name
		var elsewhere []*model.Service
		for _, s := range c.ServicesNamed(name) {
			if s.Namespace != name {
				elsewhere = append(elsewhere, s)
			}
		}
		if len(elsewhere) == 0 {
			continue
		}
		objs := []Object{nsObject(ns)}
		var homes, targets []string
		for _, s := range c.ServicesNamed(name) {
			homes = append(homes, s.Namespace) // includes N itself: its clients get N.N first
		}
		for _, s := range elsewhere {
			objs = append(objs, svcObject(s))
			targets = append(targets, s.Namespace)
		}
		qname := name + ".svc." + zone + "."
		core, kube := answers(c, qname, zone)
		sev := Warning // CoreDNS: NODATA, so musl clients fail and the rest fall through
		if kube.HasRecords() {
			sev = Error // kube-dns: the client connects to something it never meant
		}
		var exts []string
		for _, s := range c.ServicesIn(name) {
			if s.IsExternalName() {
				objs = append(objs, svcObject(s))
				exts = append(exts, s.Name)
			}
		}
		msg := fmt.Sprintf("namespace %s captures the short name of Service %s in %s: clients elsewhere that type %q get the namespace",
			name, name, strings.Join(targets, ", "), name)
		if len(exts) > 0 {
			msg += fmt.Sprintf(" (with kube-dns, the ExternalName Services %s)", strings.Join(exts, ", "))
		}
		fix := apexFix(c, name, zone)
		fixText := fix.String() + "; or rename or delete namespace " + name + "; " + fix.AllowHint() + " to nsguard"
		out = append(out, Finding{
			Check: CheckNamespaceCapture, Severity: sev, Message: msg, Objects: objs,
			Clients: Clients{Scope: "all-except", Namespaces: homes},
			Name:    qname, CoreDNS: core, KubeDNS: kube, Fix: fixText,
		})
	}
	return out
}

// apexFix is the fix for clients that type name and get namespace name: use a Service of
// that name elsewhere, the Services that are not aliases first.
func apexFix(c *model.Cluster, name, zone string) clusterdns.ApexFix {
	services, aliases := c.Homes(name, zone)
	homes := slices.DeleteFunc(append(services, aliases...), func(ns string) bool { return ns == name })
	f := clusterdns.ApexFix{Name: name, Known: true, Zone: zone + ".", Homes: homes[:min(len(homes), 3)]}
	f.More = len(homes) - len(f.Homes)
	return f
}

// apexAnswers: with kube-dns, a namespace holding ExternalName Services answers its own
// name with them, a client anywhere that types it gets their targets. Where no Service has
// that name, a capture does not follow; it is worth knowing, as the blog's fix makes one.
func apexAnswers(c *model.Cluster, zone string) []Finding {
	var out []Finding
	for _, ns := range c.Namespaces() {
		if len(c.ServicesNamed(ns.Name)) > 0 {
			continue // a capture: namespaceCaptures reports it
		}
		qname := ns.Name + ".svc." + zone + "."
		core, kube := answers(c, qname, zone)
		if !kube.HasRecords() {
			continue
		}
		objs := []Object{nsObject(ns)}
		var exts []string
		for _, s := range c.ServicesIn(ns.Name) {
			if s.IsExternalName() {
				objs = append(objs, svcObject(s))
				exts = append(exts, s.Name)
			}
		}
		out = append(out, Finding{
			Check: CheckApexAnswers, Severity: Info, Objects: objs, Clients: Clients{Scope: "all"},
			Message: fmt.Sprintf("with kube-dns, namespace %s answers its own name with its ExternalName Services %s: a client that types %q gets %s",
				ns.Name, strings.Join(exts, ", "), ns.Name, kube),
			Name: qname, CoreDNS: core, KubeDNS: kube,
			Fix: "nothing while no client types " + ns.Name + " as a host; a Service named " + ns.Name +
				" anywhere would make this a capture. nsguard logs these answers and, in mode refuse, refuses them",
		})
	}
	return out
}

// endpointShadows: Service b in C with an endpoint named a, and Service a in namespace b.
// A client in C typing a.b meant Service a in b; its first candidate a.b.C.svc is the endpoint.
func endpointShadows(c *model.Cluster, zone string) []Finding {
	var out []Finding
	for _, b := range c.Services() {
		if b.IsExternalName() {
			continue
		}
		for _, e := range c.Endpoints(b.Namespace, b.Name) {
			a := e.Name
			if !clusterdns.IsServiceName(a) {
				continue // only a name a Service can have shadows one
			}
			meant := c.Service(b.Name, a)
			if meant == nil {
				continue
			}
			qname := a + "." + b.Name + "." + b.Namespace + ".svc." + zone + "."
			core, kube := answers(c, qname, zone)
			sev := Error
			if !core.HasRecords() && !kube.HasRecords() {
				sev = Warning // a pod name: answers only with endpoint_pod_names
			}
			out = append(out, Finding{
				Check: CheckEndpointShadow, Severity: sev,
				Message: fmt.Sprintf("endpoint %s of Service %s/%s shadows Service %s in namespace %s: clients in %s that type %q get the endpoint",
					a, b.Namespace, b.Name, a, b.Name, b.Namespace, a+"."+b.Name),
				Objects: []Object{svcObject(b), {Kind: "Endpoint", Namespace: b.Namespace, Name: b.Name + "/" + a, Source: e.Source}, svcObject(meant)},
				Clients: Clients{Scope: "only", Namespaces: []string{b.Namespace}},
				Name:    qname, CoreDNS: core, KubeDNS: kube,
				Fix: clusterdns.ShadowFix{Endpoint: a, Service: b.Name, Namespace: b.Namespace, Zone: zone + "."}.String(),
			})
		}
	}
	return out
}

// aliases follows every ExternalName Service whose target is in the cluster zone: it
// must end at a name that answers, not at a namespace apex, nowhere, or in a loop.
func aliases(c *model.Cluster, zone string) []Finding {
	zones := []string{clusterdns.FQDN(zone)}
	var out []Finding
	for _, s := range c.Services() {
		if s.Type != "ExternalName" || s.ExternalName == "" {
			continue
		}
		if clusterdns.Classify(clusterdns.FQDN(s.ExternalName), zones).Shape == clusterdns.OutOfZone {
			continue
		}
		chain := []*model.Service{s}
		seen := map[*model.Service]bool{s: true}
		var f *Finding
		for f == nil {
			cur := chain[len(chain)-1]
			target := clusterdns.FQDN(cur.ExternalName)
			n := clusterdns.Classify(target, zones)
			via := chainText(chain)
			base := Finding{Clients: Clients{Scope: "all"}, Name: target, Objects: objects(chain)}
			switch n.Shape {
			case clusterdns.OutOfZone:
				// leaves the cluster: nothing more to check here
			case clusterdns.NamespaceApex:
				core, kube := answers(c, target, zone)
				base.Check, base.Severity, base.CoreDNS, base.KubeDNS = CheckAliasNamespace, Error, core, kube
				if ns := c.Namespace(n.Namespace); ns != nil {
					base.Objects = append(base.Objects, nsObject(ns))
				}
				base.Message = fmt.Sprintf("alias %s resolves through namespace apex %s (%s): CoreDNS answers %s, kube-dns %s",
					s.Namespace+"/"+s.Name, target, via, core, kube)
				base.Fix = fmt.Sprintf("point %s/%s at <service>.%s.svc.%s (a Service name, not a namespace)", cur.Namespace, cur.Name, strings.ToLower(n.Namespace), zone)
				f = &base
			case clusterdns.ServiceName:
				next := c.Service(n.Namespace, n.Service)
				if next == nil {
					base.Check, base.Severity = CheckAliasDangling, Warning
					base.CoreDNS, base.KubeDNS = answers(c, target, zone)
					base.Message = fmt.Sprintf("alias %s dangles: %s (%s) is no Service", s.Namespace+"/"+s.Name, target, via)
					base.Fix = fmt.Sprintf("create Service %s in namespace %s, or point %s/%s at a Service that exists", strings.ToLower(n.Service), strings.ToLower(n.Namespace), cur.Namespace, cur.Name)
					f = &base
					break
				}
				if next.Type == "ExternalName" && clusterdns.Classify(clusterdns.FQDN(next.ExternalName), zones).Shape != clusterdns.OutOfZone {
					if seen[next] {
						if next != s {
							break // s leads into a loop; the loop's own members report it
						}
						chain = append(chain, next)
						base.Objects = objects(chain)
						base.Check, base.Severity = CheckAliasLoop, Error
						base.Message = fmt.Sprintf("alias %s loops: %s", s.Namespace+"/"+s.Name, chainText(chain))
						base.Fix = "point one ExternalName Service of the loop at a ClusterIP or headless Service, or outside the cluster"
						f = &base
						break
					}
					seen[next] = true
					chain = append(chain, next)
					continue
				}
			default:
				core, kube := answers(c, target, zone)
				if core.HasRecords() {
					break
				}
				base.Check, base.Severity, base.CoreDNS, base.KubeDNS = CheckAliasDangling, Warning, core, kube
				base.Message = fmt.Sprintf("alias %s dangles: %s (%s) is a %s name that no Service answers", s.Namespace+"/"+s.Name, target, via, n.Shape)
				base.Fix = fmt.Sprintf("point %s/%s at <service>.<namespace>.svc.%s", cur.Namespace, cur.Name, zone)
				f = &base
			}
			if f == nil {
				break
			}
		}
		if f != nil {
			out = append(out, *f)
		}
	}
	return out
}

func objects(chain []*model.Service) []Object {
	out := make([]Object, len(chain))
	for i, s := range chain {
		out[i] = svcObject(s)
	}
	return out
}

func chainText(chain []*model.Service) string {
	parts := make([]string, 0, len(chain)+1)
	for _, s := range chain {
		parts = append(parts, s.Namespace+"/"+s.Name)
	}
	parts = append(parts, clusterdns.FQDN(chain[len(chain)-1].ExternalName))
	return strings.Join(parts, " -> ")
}

// schemaLabels are the labels cluster DNS gives meaning to: a namespace named so makes
// names below it ambiguous (coredns#5574).
var schemaLabels = map[string]bool{"svc": true, "pod": true}

// tlds are top-level domains that clients commonly type. A namespace named after one
// turns <x>.<tld> into Service x of that namespace, and <y>.<x>.<tld> into one of its
// endpoints (kubernetes#60534).
var tlds = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`com net org edu gov mil int arpa info biz io ai app dev cloud co me tv cc ly sh
		gg to fm xyz tech local localhost internal us uk eu de fr nl be ch at it es pt se no dk fi pl cz ru ua cn jp
		kr in au nz ca br mx ar za ie il`) {
		tlds[t] = true
	}
}

func reserved(c *model.Cluster, zone string) []Finding {
	var out []Finding
	for _, ns := range c.Namespaces() {
		name := ns.Name
		objs := []Object{nsObject(ns)}
		for _, s := range c.ServicesIn(name) {
			objs = append(objs, svcObject(s))
		}
		switch {
		case schemaLabels[name]:
			out = append(out, Finding{
				Check: CheckReserved, Severity: Error, Objects: objs, Clients: Clients{Scope: "all"},
				Message: fmt.Sprintf("namespace %s is named like a label of the DNS schema: %s.svc.%s reads both as namespace apex and as schema names below it", name, name, zone),
				Fix:     "rename namespace " + name,
			})
		case tlds[name]:
			// Only a Service in it captures <x>.<tld>; an empty one is worth knowing, not failing on.
			sev := Info
			if len(objs) > 1 {
				sev = Warning
			}
			out = append(out, Finding{
				Check: CheckReserved, Severity: sev, Objects: objs, Clients: Clients{Scope: "all"},
				Message: fmt.Sprintf("namespace %s is named like a top-level domain: a client typing <x>.%s gets Service x of namespace %s first, and <y>.<x>.%s one of its endpoints",
					name, name, name, name),
				Fix: "rename namespace " + name + "; clients should use fully qualified names (with a trailing dot) for outside hosts",
			})
		}
	}
	return out
}
