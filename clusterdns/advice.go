package clusterdns

import (
	"strconv"
	"strings"
)

// ApexFix says what to change when a client that typed Name got the apex of namespace Name.
type ApexFix struct {
	Name   string   // what the client typed, in lower case: the namespace's name
	Client string   // the client's namespace; "" when unknown
	Known  bool     // Homes is known: from a view of the cluster, or from manifests
	Homes  []string // namespaces holding the Service Name (not an alias to another), best first
	More   int      // how many more namespaces hold one than Homes names
	Zone   string   // the cluster zone, fully qualified
}

// String is the fix, in words a developer can act on.
func (f ApexFix) String() string {
	client := f.Client
	if client == "" {
		client = "the client's namespace"
	}
	x := f.Name
	switch {
	case !f.Known:
		return "if " + x + " is a Service, ask for " + x + ".<its namespace>, or create an ExternalName Service " + x + " in " + client
	case len(f.Homes) == 0:
		return "no Service " + x + " exists in any namespace; if one is meant, create it"
	}
	var b strings.Builder
	if f.Client != "" {
		b.WriteString("no Service " + x + " in " + f.Client + "; ")
	}
	b.WriteString("Service " + x + " exists in " + strings.Join(f.Homes, ", "))
	if f.More > 0 {
		b.WriteString(" and " + strconv.Itoa(f.More) + " more")
	}
	home := x + "." + f.Homes[0]
	b.WriteString("; use " + home + ", or create an ExternalName Service " + x + " in " + client +
		" pointing at " + home + ".svc." + strings.TrimSuffix(f.Zone, "."))
	return b.String()
}

// AllowHint is how to keep an intentional alias: a namespace meant to answer its bare name.
func (f ApexFix) AllowHint() string {
	return "if namespace " + f.Name + " is meant to answer, add 'allow namespace " + f.Name + "'"
}

// ShadowFix says what to change when a client in Namespace typed Endpoint.Service, meaning
// Service Endpoint in namespace Service, and got endpoint Endpoint of Service Service.
type ShadowFix struct {
	Endpoint, Service, Namespace string // in lower case
	Zone                         string // the cluster zone, fully qualified
}

// ShadowFix is what to change for endpoint name n (<endpoint>.<service>.<namespace>.svc.<zone>)
// that shadows a Service.
func (n Name) ShadowFix() ShadowFix {
	return ShadowFix{Endpoint: strings.ToLower(n.Endpoint), Service: strings.ToLower(n.Service),
		Namespace: strings.ToLower(n.Namespace), Zone: n.Zone}
}

// Typed is what the client most likely typed.
func (f ShadowFix) Typed() string { return f.Endpoint + "." + f.Service }

// Meant is what it most likely meant.
func (f ShadowFix) Meant() string { return "Service " + f.Endpoint + " in namespace " + f.Service }

// Got is what answered instead.
func (f ShadowFix) Got() string {
	return "endpoint " + f.Endpoint + " of Service " + f.Service + " in namespace " + f.Namespace
}

// String is the fix.
func (f ShadowFix) String() string {
	return "ask for " + f.Typed() + ".svc." + strings.TrimSuffix(f.Zone, ".") + " (or " + f.Typed() +
		".svc), which only the Service answers; or rename the endpoint " + f.Endpoint + " of Service " + f.Service
}
