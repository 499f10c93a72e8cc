package audit

import (
	"fmt"
	"slices"
	"sort"
	"strings"

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
	Check    string             `json:"check"`
	Severity Severity           `json:"severity"`
	Message  string             `json:"message"`
	Objects  []Object           `json:"objects"`
	Clients  Clients            `json:"clients"`
	Name     string             `json:"name,omitempty"` // the DNS name that answers wrongly
	CoreDNS  *clusterdns.Answer `json:"coredns,omitempty"`
	KubeDNS  *clusterdns.Answer `json:"kubeDNS,omitempty"`
	Fix      string             `json:"fix"`
}

// Audit runs every check on c for the cluster zone (e.g. "cluster.local") and returns
// the findings, most severe first, in a stable order. It is a loop over the names of c:
// the plugin's live findings call the same checks for the names a change touches.
func Audit(c Cluster, zone string) []Finding {
	zone = normalZone(zone)
	var out []Finding
	for _, ns := range c.AllNamespaces() {
		out = append(out, NamespaceFindings(c, ns, zone)...)
	}
	for _, s := range c.AllServices() {
		out = append(out, endpointShadows(c, s, zone)...)
		if f, ok := AliasFinding(c, s.Namespace, s.Name, zone); ok {
			out = append(out, f)
		}
	}
	Sort(out)
	return out
}

// Sort orders findings most severe first, then by check and message.
func Sort(out []Finding) {
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
}

// NamespaceFindings runs the checks of namespace name (namespace-captures-service,
// namespace-apex-answers and reserved-namespace): none when it does not exist. Its
// findings change with the namespace, the Services called name and the Services in it.
func NamespaceFindings(r Names, name, zone string) []Finding {
	zone = normalZone(zone)
	source, ok := r.Namespace(name)
	if !ok {
		return nil
	}
	ns := Object{Kind: "Namespace", Name: name, Source: source}
	in := r.ServicesIn(name)
	var out []Finding
	if f, ok := namespaceCapture(r, ns, in, zone); ok {
		out = append(out, f)
	} else if f, ok := apexAnswers(r, ns, in, zone); ok {
		out = append(out, f)
	}
	if f, ok := reserved(ns, in, zone); ok {
		out = append(out, f)
	}
	return out
}

func svcObject(s Ref) Object {
	return Object{Kind: "Service", Namespace: s.Namespace, Name: s.Name, Source: s.Source}
}

// aliasesIn are the ExternalName Services of a namespace, as objects and by name: kube-dns
// answers the namespace's own name with them.
func aliasesIn(in []Ref) (objs []Object, names []string) {
	for _, s := range in {
		if s.Alias {
			objs = append(objs, svcObject(s))
			names = append(names, s.Name)
		}
	}
	return objs, names
}

// kubeDNSRecords reports whether kube-dns answers a namespace's apex with records: its
// answer where it is known, else whether the namespace holds ExternalName Services, the
// entries kube-dns answers it with.
func kubeDNSRecords(kube *clusterdns.Answer, aliases []string) bool {
	if kube != nil {
		return kube.HasRecords()
	}
	return len(aliases) > 0
}

// namespaceCapture: namespace N and Service N in another namespace D. A client outside D
// that types N sends N.svc.<zone> second, and gets the namespace.
func namespaceCapture(r Names, ns Object, in []Ref, zone string) (Finding, bool) {
	name := ns.Name
	named := r.ServicesNamed(name)
	objs := []Object{ns}
	var homes, targets []string
	for _, s := range named {
		homes = append(homes, s.Namespace) // includes N itself: its clients get N.N first
		if s.Namespace != name {
			objs = append(objs, svcObject(s))
			targets = append(targets, s.Namespace)
		}
	}
	if len(targets) == 0 {
		return Finding{}, false
	}
	qname := name + ".svc." + zone + "."
	core, kube := answers(r, qname, zone)
	extObjs, exts := aliasesIn(in)
	sev := Warning // CoreDNS: NODATA, so musl clients fail and the rest fall through
	if kubeDNSRecords(kube, exts) {
		sev = Error // kube-dns: the client connects to something it never meant
	}
	objs = append(objs, extObjs...)
	msg := fmt.Sprintf("namespace %s captures the short name of Service %s in %s: clients elsewhere that type %q get the namespace",
		name, name, strings.Join(targets, ", "), name)
	if len(exts) > 0 {
		msg += fmt.Sprintf(" (with kube-dns, the ExternalName Services %s)", strings.Join(exts, ", "))
	}
	fix := apexFix(r, name, zone)
	return Finding{
		Check: CheckNamespaceCapture, Severity: sev, Message: msg, Objects: objs,
		Clients: Clients{Scope: "all-except", Namespaces: homes},
		Name:    qname, CoreDNS: core, KubeDNS: kube,
		Fix: fix.String() + "; or rename or delete namespace " + name + "; " + fix.AllowHint() + " to nsguard",
	}, true
}

// apexFix is the fix for clients that type name and get namespace name: use a Service of
// that name elsewhere, the Services that are not aliases first.
func apexFix(r Names, name, zone string) clusterdns.ApexFix {
	services, aliases := Homes(r, name, zone)
	homes := slices.DeleteFunc(append(services, aliases...), func(ns string) bool { return ns == name })
	f := clusterdns.ApexFix{Name: name, Known: true, Zone: zone + ".", Homes: homes[:min(len(homes), 3)]}
	f.More = len(homes) - len(f.Homes)
	return f
}

// apexAnswers: with kube-dns, a namespace holding ExternalName Services answers its own
// name with them, a client anywhere that types it gets their targets. Where no Service has
// that name, a capture does not follow; it is worth knowing, as the blog's fix makes one.
func apexAnswers(r Names, ns Object, in []Ref, zone string) (Finding, bool) {
	if len(r.ServicesNamed(ns.Name)) > 0 {
		return Finding{}, false // a capture: namespaceCapture reports it
	}
	qname := ns.Name + ".svc." + zone + "."
	core, kube := answers(r, qname, zone)
	extObjs, exts := aliasesIn(in)
	if !kubeDNSRecords(kube, exts) {
		return Finding{}, false
	}
	gets := "their targets"
	if kube != nil {
		gets = kube.String()
	}
	return Finding{
		Check: CheckApexAnswers, Severity: Info, Objects: append([]Object{ns}, extObjs...), Clients: Clients{Scope: "all"},
		Message: fmt.Sprintf("with kube-dns, namespace %s answers its own name with its ExternalName Services %s: a client that types %q gets %s",
			ns.Name, strings.Join(exts, ", "), ns.Name, gets),
		Name: qname, CoreDNS: core, KubeDNS: kube,
		Fix: "nothing while no client types " + ns.Name + " as a host; a Service named " + ns.Name +
			" anywhere would make this a capture. nsguard logs these answers and, in mode refuse, refuses them",
	}, true
}

// endpointShadows: Service b in C with an endpoint named a, and Service a in namespace b.
// A client in C typing a.b meant Service a in b; its first candidate a.b.C.svc is the endpoint.
// It reads endpoints, which only the offline model keeps.
func endpointShadows(c Cluster, b Ref, zone string) []Finding {
	if b.Alias {
		return nil
	}
	var out []Finding
	for _, e := range c.Endpoints(b.Namespace, b.Name) {
		a := e.Name
		if !clusterdns.IsServiceName(a) {
			continue // only a name a Service can have shadows one
		}
		meant, ok := c.Service(b.Name, a)
		if !ok {
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
	return out
}

// AliasFinding follows Service ns/name when it is an ExternalName Service whose target is
// in the cluster zone: it must end at a name that answers, not at a namespace apex
// (alias-through-namespace), nowhere (alias-dangling), or in a loop (alias-loop). Its
// finding changes with the Services along the chain.
func AliasFinding(r Names, ns, name, zone string) (Finding, bool) {
	zone = normalZone(zone)
	zones := []string{clusterdns.FQDN(zone)}
	s, ok := r.Service(ns, name)
	if !ok || !s.Alias || s.ExternalName == "" || clusterdns.Classify(clusterdns.FQDN(s.ExternalName), zones).Shape == clusterdns.OutOfZone {
		return Finding{}, false
	}
	alias := s.Namespace + "/" + s.Name
	chain := []Ref{s}
	seen := map[string]bool{alias: true}
	for {
		cur := chain[len(chain)-1]
		target := clusterdns.FQDN(cur.ExternalName)
		n := clusterdns.Classify(target, zones)
		base := Finding{Clients: Clients{Scope: "all"}, Name: target, Objects: objects(chain)}
		via := chainText(chain)
		switch n.Shape {
		case clusterdns.OutOfZone:
			return Finding{}, false // leaves the cluster: nothing more to check here
		case clusterdns.NamespaceApex:
			core, kube := answers(r, target, zone)
			base.Check, base.Severity, base.CoreDNS, base.KubeDNS = CheckAliasNamespace, Error, core, kube
			if source, ok := r.Namespace(strings.ToLower(n.Namespace)); ok {
				base.Objects = append(base.Objects, Object{Kind: "Namespace", Name: strings.ToLower(n.Namespace), Source: source})
			}
			base.Message = fmt.Sprintf("alias %s resolves through namespace apex %s (%s)", alias, target, via)
			if core != nil {
				base.Message += fmt.Sprintf(": CoreDNS answers %s, kube-dns %s", core, kube)
			}
			base.Fix = fmt.Sprintf("point %s/%s at <service>.%s.svc.%s (a Service name, not a namespace)", cur.Namespace, cur.Name, strings.ToLower(n.Namespace), zone)
			return base, true
		case clusterdns.ServiceName:
			next, ok := r.Service(strings.ToLower(n.Namespace), strings.ToLower(n.Service))
			if !ok {
				base.Check, base.Severity = CheckAliasDangling, Warning
				base.CoreDNS, base.KubeDNS = answers(r, target, zone)
				base.Message = fmt.Sprintf("alias %s dangles: %s (%s) is no Service", alias, target, via)
				base.Fix = fmt.Sprintf("create Service %s in namespace %s, or point %s/%s at a Service that exists", strings.ToLower(n.Service), strings.ToLower(n.Namespace), cur.Namespace, cur.Name)
				return base, true
			}
			if !next.Alias || clusterdns.Classify(clusterdns.FQDN(next.ExternalName), zones).Shape == clusterdns.OutOfZone {
				return Finding{}, false // ends at a Service that answers, or outside the cluster
			}
			key := next.Namespace + "/" + next.Name
			if seen[key] {
				if key != alias {
					return Finding{}, false // s leads into a loop; the loop's own members report it
				}
				chain = append(chain, next)
				base.Objects = objects(chain)
				base.Check, base.Severity = CheckAliasLoop, Error
				base.Message = fmt.Sprintf("alias %s loops: %s", alias, chainText(chain))
				base.Fix = "point one ExternalName Service of the loop at a ClusterIP or headless Service, or outside the cluster"
				return base, true
			}
			seen[key] = true
			chain = append(chain, next)
		default:
			core, kube := answers(r, target, zone)
			if core == nil || core.HasRecords() {
				return Finding{}, false // only the answer tells whether such a name answers
			}
			base.Check, base.Severity, base.CoreDNS, base.KubeDNS = CheckAliasDangling, Warning, core, kube
			base.Message = fmt.Sprintf("alias %s dangles: %s (%s) is a %s name that no Service answers", alias, target, via, n.Shape)
			base.Fix = fmt.Sprintf("point %s/%s at <service>.<namespace>.svc.%s", cur.Namespace, cur.Name, zone)
			return base, true
		}
	}
}

func objects(chain []Ref) []Object {
	out := make([]Object, len(chain))
	for i, s := range chain {
		out[i] = svcObject(s)
	}
	return out
}

func chainText(chain []Ref) string {
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

// reserved: a namespace named like a label of the DNS schema or a top-level domain.
func reserved(ns Object, in []Ref, zone string) (Finding, bool) {
	name := ns.Name
	objs := []Object{ns}
	for _, s := range in {
		objs = append(objs, svcObject(s))
	}
	switch {
	case schemaLabels[name]:
		return Finding{
			Check: CheckReserved, Severity: Error, Objects: objs, Clients: Clients{Scope: "all"},
			Message: fmt.Sprintf("namespace %s is named like a label of the DNS schema: %s.svc.%s reads both as namespace apex and as schema names below it", name, name, zone),
			Fix:     "rename namespace " + name,
		}, true
	case tlds[name]:
		// Only a Service in it captures <x>.<tld>; an empty one is worth knowing, not failing on.
		sev := Info
		if len(objs) > 1 {
			sev = Warning
		}
		return Finding{
			Check: CheckReserved, Severity: sev, Objects: objs, Clients: Clients{Scope: "all"},
			Message: fmt.Sprintf("namespace %s is named like a top-level domain: a client typing <x>.%s gets Service x of namespace %s first, and <y>.<x>.%s one of its endpoints",
				name, name, name, name),
			Fix: "rename namespace " + name + "; clients should use fully qualified names (with a trailing dot) for outside hosts",
		}, true
	}
	return Finding{}, false
}

// ReservedNames are the namespace names reserved-namespace reports.
func ReservedNames() []string {
	out := make([]string, 0, len(schemaLabels)+len(tlds))
	for n := range schemaLabels {
		out = append(out, n)
	}
	for n := range tlds {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
