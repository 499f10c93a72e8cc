package audit

import (
	"fmt"
	"strings"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
)

// ExplainOptions are a pod's resolver settings. Zero values take the Kubernetes defaults.
type ExplainOptions struct {
	Zone   string   // cluster zone; default cluster.local
	Search []string // default <from>.svc.<zone> svc.<zone> <zone>
	Ndots  int      // 0 means the default, 5; a negative value means ndots:0
}

// Candidate is one name the resolver sends, how cluster DNS reads it and what it answers.
type Candidate struct {
	Name    string       `json:"name"`
	ReadAs  string       `json:"readAs"`
	CoreDNS model.Answer `json:"coredns"`
	KubeDNS model.Answer `json:"kubeDNS"`
}

// Outcome is where a lookup ends with one cluster DNS. Index is a 0-based candidate
// index, -1 for none.
type Outcome struct {
	Winner    int               `json:"winner"`   // glibc and Go: the first candidate with records, or an upstream one
	MuslStop  int               `json:"muslStop"` // musl: a NODATA candidate before the winner, where it stops and fails
	Meant     bool              `json:"meant"`    // the winner is what the name most likely meant
	Verdict   string            `json:"verdict"`
	Resolvers []ResolverOutcome `json:"resolvers"` // what each stub resolver gets
}

// The stub resolvers Explain models.
const (
	Glibc = "glibc"
	Musl  = "musl"
	Go    = "go"
)

// ResolverOutcome is what one stub resolver's lookup gets.
type ResolverOutcome struct {
	Resolver  string   `json:"resolver"`            // glibc, musl or go
	Candidate int      `json:"candidate"`           // where its search ends; -1 when it runs out
	Addresses []string `json:"addresses,omitempty"` // what it returns, or one of them with OneOf
	OneOf     bool     `json:"oneOf,omitempty"`     // it returns one of Addresses, as the answer's CNAME is picked at random
	MayFail   bool     `json:"mayFail,omitempty"`   // glibc fails when a target's address comes before the CNAME, which a shuffled answer does at random
	Fails     bool     `json:"fails,omitempty"`     // the lookup fails
	Meant     bool     `json:"meant"`               // it reaches what the name most likely meant
}

// Explanation is what Explain found.
type Explanation struct {
	Name       string      `json:"name"`
	From       string      `json:"from"`
	Zone       string      `json:"zone"`
	Search     []string    `json:"search"`
	Ndots      int         `json:"ndots"`
	Meant      string      `json:"meant"`               // what the name most likely meant, in words
	MeantName  string      `json:"meantName,omitempty"` // its fully qualified name, if in the cluster
	Candidates []Candidate `json:"candidates"`
	CoreDNS    Outcome     `json:"corednsOutcome"`
	KubeDNS    Outcome     `json:"kubeDNSOutcome"`
}

// Explain lists the search candidates a pod in namespace from sends for name, and what
// CoreDNS and kube-dns answer to each.
func Explain(c *model.Cluster, name, from string, o ExplainOptions) Explanation {
	zone := strings.ToLower(strings.TrimSuffix(o.Zone, "."))
	if zone == "" {
		zone = "cluster.local"
	}
	from = strings.ToLower(from)
	search := o.Search
	if search == nil {
		search = []string{from + ".svc." + zone, "svc." + zone, zone}
	}
	ndots := o.Ndots
	switch {
	case ndots == 0:
		ndots = 5
	case ndots < 0:
		ndots = 0
	}
	e := Explanation{Name: name, From: from, Zone: zone, Search: search, Ndots: ndots}
	for _, cand := range Candidates(name, search, ndots) {
		e.Candidates = append(e.Candidates, Candidate{
			Name: cand, ReadAs: readAs(cand, zone),
			CoreDNS: c.CoreDNS(cand, model.TypeA, zone, nil), KubeDNS: c.KubeDNS(cand, model.TypeA, zone, nil),
		})
	}
	e.Meant, e.MeantName = meant(c, name, from, zone)
	e.CoreDNS = outcome(e, func(c Candidate) model.Answer { return c.CoreDNS })
	e.KubeDNS = outcome(e, func(c Candidate) model.Answer { return c.KubeDNS })
	return e
}

// Candidates returns the names a stub resolver sends for name, in order: a name with a
// trailing dot as is; one with fewer than ndots dots through the search list first, then
// as typed; any other as typed first.
func Candidates(name string, search []string, ndots int) []string {
	name = strings.ToLower(name)
	if strings.HasSuffix(name, ".") {
		return []string{name}
	}
	var out []string
	for _, s := range search {
		out = append(out, name+"."+strings.ToLower(strings.Trim(s, "."))+".")
	}
	if strings.Count(name, ".") >= ndots {
		return append([]string{name + "."}, out...)
	}
	return append(out, name+".")
}

func readAs(qname, zone string) string {
	n := clusterdns.Classify(qname, []string{clusterdns.FQDN(zone)})
	switch n.Shape {
	case clusterdns.OutOfZone:
		return "outside the cluster zone"
	case clusterdns.NamespaceApex:
		return "namespace " + n.Namespace + " (apex)"
	case clusterdns.ServiceName:
		return "Service " + n.Service + " in " + n.Namespace
	case clusterdns.EndpointName:
		return "endpoint " + n.Endpoint + " of Service " + n.Service + " in " + n.Namespace
	case clusterdns.Other:
		return "no cluster name"
	}
	return n.Shape.String()
}

// meant guesses what a person typing name in namespace from wanted: x is Service x, a.b
// and a.b.svc are Service a in namespace b, and a name in the zone is itself. Anything
// else is a host outside the cluster.
func meant(c *model.Cluster, name, from, zone string) (string, string) {
	name = strings.ToLower(name)
	zones := []string{clusterdns.FQDN(zone)}
	if strings.HasSuffix(name, ".") {
		if clusterdns.Classify(name, zones).Shape == clusterdns.OutOfZone {
			return "host " + name + " outside the cluster", ""
		}
		return readAs(name, zone), name
	}
	if n := clusterdns.Classify(name+".", zones); n.Shape != clusterdns.OutOfZone {
		return readAs(name+".", zone), name + "."
	}
	labels := strings.Split(name, ".")
	svc := func(ns, s string) (string, string) {
		return "Service " + s + " in " + ns, s + "." + ns + ".svc." + zone + "."
	}
	switch {
	case len(labels) == 1:
		if c.Service(from, name) != nil {
			return svc(from, name)
		}
		homes, aliases := homes(offline{c}, name, zone)
		if len(homes) == 0 {
			homes = aliases // an alias still reaches something
		}
		switch len(homes) {
		case 0:
		case 1:
			m, _ := svc(homes[0], name)
			return m + ", which " + name + " does not reach from " + from + " (use " + name + "." + homes[0] + ")", ""
		default:
			return "Service " + name + " (in " + strings.Join(homes, ", ") + "; none in " + from + ")", ""
		}
	case len(labels) == 2 || len(labels) == 3 && labels[2] == "svc":
		if c.Service(labels[1], labels[0]) != nil {
			return svc(labels[1], labels[0])
		}
		if len(labels) == 2 && c.Endpoint(from, labels[1], labels[0]) != nil {
			return "endpoint " + labels[0] + " of Service " + labels[1] + " in " + from, name + "." + from + ".svc." + zone + "."
		}
	}
	return "host " + name + " outside the cluster", ""
}

func outcome(e Explanation, answer func(Candidate) model.Answer) Outcome {
	o := Outcome{Winner: -1, MuslStop: -1}
	for i, cand := range e.Candidates {
		if a := answer(cand); a.HasRecords() || a.Rcode == model.Upstream {
			o.Winner = i
			break
		}
	}
	for _, r := range []string{Glibc, Musl, Go} {
		ro := lookup(r, e, answer)
		o.Resolvers = append(o.Resolvers, ro)
		if r == Musl && ro.Fails && ro.Candidate >= 0 && ro.Candidate < o.Winner {
			o.MuslStop = ro.Candidate
		}
	}
	outside := e.MeantName == "" && strings.HasPrefix(e.Meant, "host ")
	switch {
	case o.Winner < 0:
		o.Verdict = "no candidate answers: the lookup fails"
		return o
	case e.Candidates[o.Winner].Name == e.MeantName:
		o.Meant = true
	case outside && answer(e.Candidates[o.Winner]).Rcode == model.Upstream:
		o.Meant = true
	}
	for i := range o.Resolvers {
		ro := &o.Resolvers[i]
		ro.Meant = o.Meant && ro.Candidate == o.Winner && !ro.Fails
	}
	w := e.Candidates[o.Winner]
	if answer(w).Rcode == model.Upstream {
		o.Verdict = fmt.Sprintf("candidate %d (%s) goes upstream", o.Winner+1, w.Name)
	} else {
		o.Verdict = fmt.Sprintf("candidate %d (%s, %s) answers %s", o.Winner+1, w.Name, w.ReadAs, answer(w))
	}
	if o.Meant {
		o.Verdict += ": as meant"
	} else {
		o.Verdict += ": NOT what " + e.Name + " most likely meant (" + e.Meant + ")"
	}
	if o.MuslStop >= 0 {
		o.Verdict += fmt.Sprintf("; musl stops at candidate %d (NODATA) and fails", o.MuslStop+1)
	}
	if g := o.Resolvers[0]; g.MayFail {
		o.Verdict += "; glibc gets " + strings.Join(g.Addresses, " or ") + ", or fails when that address comes before the CNAME"
	}
	return o
}

// lookup walks the candidates as resolver does, for an A question:
//   - NXDOMAIN: every resolver goes on to the next candidate;
//   - NODATA: glibc and Go go on, musl stops and the lookup fails;
//   - records: musl and Go take every address in the answer; glibc follows the CNAME and
//     keeps only the addresses of its target, and fails, without going on, when they come
//     before the CNAME;
//   - a name that goes upstream ends the search with what the upstream says.
func lookup(resolver string, e Explanation, answer func(Candidate) model.Answer) ResolverOutcome {
	for i, cand := range e.Candidates {
		a := answer(cand)
		switch {
		case a.Rcode == model.Upstream:
			return ResolverOutcome{Resolver: resolver, Candidate: i}
		case a.NoData() && resolver == Musl:
			return ResolverOutcome{Resolver: resolver, Candidate: i, Fails: true}
		case !a.HasRecords():
			continue
		case resolver != Glibc:
			return ResolverOutcome{Resolver: resolver, Candidate: i, Addresses: a.Addresses(), Fails: len(a.Addresses()) == 0}
		}
		o := ResolverOutcome{Resolver: resolver, Candidate: i}
		targets := a.CNAMEOneOf
		if len(targets) == 0 {
			targets = []string{cnameTarget(cand.Name, a.Records)}
		}
		cname := len(a.CNAMEOneOf) > 0 || targets[0] != cand.Name
		for _, t := range targets {
			for _, r := range a.Records {
				if r.Owner == t && (r.Type == model.TypeA || r.Type == model.TypeAAAA) {
					o.Addresses = append(o.Addresses, r.Data)
				}
			}
		}
		o.OneOf = len(a.CNAMEOneOf) > 1 && len(o.Addresses) > 1
		o.MayFail = a.Shuffled && cname
		o.Fails = len(o.Addresses) == 0
		return o
	}
	return ResolverOutcome{Resolver: resolver, Candidate: -1, Fails: true}
}

// cnameTarget follows the CNAME records from name to the end of the chain.
func cnameTarget(name string, records []model.Record) string {
	for range records {
		next := ""
		for _, r := range records {
			if r.Type == model.TypeCNAME && r.Owner == name {
				next = r.Data
			}
		}
		if next == "" {
			break
		}
		name = next
	}
	return name
}
