package model

import (
	"fmt"
	"strings"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/clusterdns"
)

// ExplainOptions are a pod's resolver settings. Zero values take the Kubernetes defaults.
type ExplainOptions struct {
	Zone   string   // cluster zone; default cluster.local
	Search []string // default <from>.svc.<zone> svc.<zone> <zone>
	Ndots  int      // 0 means the default, 5; a negative value means ndots:0
	// Refuse is what nsguard in mode refuse, in front of cluster DNS, answers in place of
	// a namespace apex's NOERROR: NXDOMAIN or REFUSED (its rcode); "" for no nsguard, or
	// mode log, which changes no answer.
	Refuse string
	// Upstream answers the names outside the cluster zone; nil when they are not known.
	Upstream UpstreamResolver
}

// Candidate is one name the resolver sends, how cluster DNS reads it and what it answers.
type Candidate struct {
	Name    string            `json:"name"`
	ReadAs  string            `json:"readAs"`
	CoreDNS clusterdns.Answer `json:"coredns"`
	KubeDNS clusterdns.Answer `json:"kubeDNS"`
}

// Outcome is where a lookup ends with one cluster DNS. Index is a 0-based candidate
// index, -1 for none.
type Outcome struct {
	Winner    int               `json:"winner"`   // the first candidate with records, or an upstream one: where glibc and Go end past NODATA
	MuslStop  int               `json:"muslStop"` // musl: a NODATA candidate before the winner, where it stops and fails
	Meant     bool              `json:"meant"`    // the winner is what the name most likely meant
	Verdict   string            `json:"verdict"`
	Resolvers []ResolverOutcome `json:"resolvers"` // what each stub resolver gets
}

// The stub resolvers Explain models, in the order of an Outcome's Resolvers: glibc's and
// musl's getaddrinfo, Go's own resolver, and c-ares's ares_getaddrinfo (Envoy, gRPC C-core,
// curl builds).
const (
	Glibc = "glibc"
	Musl  = "musl"
	Go    = "go"
	CAres = "c-ares"
)

// Resolvers are the stub resolvers Explain models.
var Resolvers = []string{Glibc, Musl, Go, CAres}

// CAresVersion is the c-ares release Explain models, Debian 12's. Its search walk is the
// same from 1.18.0, which first went on past NODATA; 1.26.0 takes every address in an
// answer, whatever its owner; from 1.33.1 a single-label name goes on past SERVFAIL and
// REFUSED.
const CAresVersion = "1.18.1"

// Rcodes a refusal or a broken server answers.
const (
	ServFail = "SERVFAIL"
	Refused  = "REFUSED"
)

// ResolverOutcome is what one stub resolver's lookup gets.
type ResolverOutcome struct {
	Resolver  string   `json:"resolver"`            // glibc, musl, go or c-ares
	Candidate int      `json:"candidate"`           // where its search ends; -1 when it runs out
	Addresses []string `json:"addresses,omitempty"` // what it returns, or one of them with OneOf
	OneOf     bool     `json:"oneOf,omitempty"`     // it returns one of Addresses, as the answer's CNAME is picked at random
	MayFail   bool     `json:"mayFail,omitempty"`   // glibc fails when a target's address comes before the CNAME, which a shuffled answer does at random
	Fails     bool     `json:"fails,omitempty"`     // the lookup fails
	Meant     bool     `json:"meant"`               // it reaches what the name most likely meant
	// OrNext is where c-ares's search ends when a shuffled answer puts the address before
	// the CNAME: it reads that answer as NODATA and goes on.
	OrNext *ResolverOutcome `json:"orNext,omitempty"`
}

// Explanation is what Explain found.
type Explanation struct {
	Name       string      `json:"name"`
	From       string      `json:"from"`
	Zone       string      `json:"zone"`
	Search     []string    `json:"search"`
	Ndots      int         `json:"ndots"`
	Refuse     string      `json:"refuse,omitempty"`    // the rcode nsguard refuses with, if modelled
	Meant      string      `json:"meant"`               // what the name most likely meant, in words
	MeantName  string      `json:"meantName,omitempty"` // its fully qualified name, if in the cluster
	Candidates []Candidate `json:"candidates"`
	CoreDNS    Outcome     `json:"corednsOutcome"`
	KubeDNS    Outcome     `json:"kubeDNSOutcome"`
}

// Explain lists the search candidates a pod in namespace from sends for name, and what
// CoreDNS and kube-dns answer to each.
func Explain(c *Cluster, name, from string, o ExplainOptions) Explanation {
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
	e := Explanation{Name: name, From: from, Zone: zone, Search: search, Ndots: ndots, Refuse: o.Refuse}
	for _, cand := range Candidates(name, search, ndots) {
		e.Candidates = append(e.Candidates, Candidate{
			Name: cand, ReadAs: readAs(cand, zone),
			CoreDNS: refused(cand, zone, o.Refuse, c.CoreDNS(cand, clusterdns.TypeA, zone, o.Upstream)),
			KubeDNS: refused(cand, zone, o.Refuse, c.KubeDNS(cand, clusterdns.TypeA, zone, o.Upstream)),
		})
	}
	e.Meant, e.MeantName = meant(c, name, from, zone)
	e.CoreDNS = outcome(e, func(c Candidate) clusterdns.Answer { return c.CoreDNS })
	e.KubeDNS = outcome(e, func(c Candidate) clusterdns.Answer { return c.KubeDNS })
	return e
}

// refused is the answer a client gets for qname from nsguard answering rcode in mode refuse
// in front of cluster DNS's answer a: the rcode for a namespace apex's NOERROR (NODATA or
// records), a itself for everything else, as nsguard holds nothing else.
func refused(qname, zone, rcode string, a clusterdns.Answer) clusterdns.Answer {
	if rcode == "" || a.Rcode != clusterdns.NoError || clusterdns.Classify(qname, []string{clusterdns.FQDN(zone)}).Shape != clusterdns.NamespaceApex {
		return a
	}
	return clusterdns.Answer{Rcode: rcode, Note: "nsguard refuses " + a.String()}
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
func meant(c *Cluster, name, from, zone string) (string, string) {
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
		homes, aliases := audit.Homes(offline{c}, name, zone)
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

func outcome(e Explanation, answer func(Candidate) clusterdns.Answer) Outcome {
	o := Outcome{Winner: -1, MuslStop: -1}
	for i, cand := range e.Candidates {
		if a := answer(cand); a.HasRecords() || a.Rcode == clusterdns.Upstream {
			o.Winner = i
			break
		}
	}
	for _, r := range Resolvers {
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
	case outside && answer(e.Candidates[o.Winner]).Rcode == clusterdns.Upstream:
		o.Meant = true
	}
	for i := range o.Resolvers {
		for ro := &o.Resolvers[i]; ro != nil; ro = ro.OrNext {
			ro.Meant = o.Meant && ro.Candidate == o.Winner && !ro.Fails
		}
	}
	w := e.Candidates[o.Winner]
	if answer(w).Rcode == clusterdns.Upstream {
		o.Verdict = fmt.Sprintf("candidate %d (%s) goes upstream", o.Winner+1, w.Name)
	} else {
		o.Verdict = fmt.Sprintf("candidate %d (%s, %s) answers %s", o.Winner+1, w.Name, w.ReadAs, answer(w))
	}
	if o.Meant {
		o.Verdict += ": as meant"
	} else {
		o.Verdict += ": NOT what " + e.Name + " most likely meant (" + e.Meant + ")"
	}
	o.Verdict += stops(e, o, answer)
	for _, r := range o.Resolvers {
		switch {
		case r.MayFail:
			o.Verdict += "; " + r.Resolver + " gets " + strings.Join(r.Addresses, " or ") + ", or fails when that address comes before the CNAME"
		case r.OrNext != nil:
			o.Verdict += fmt.Sprintf("; %s gets %s, or goes on when that address comes before the CNAME", r.Resolver, strings.Join(r.Addresses, " or "))
		}
	}
	return o
}

// stops names the resolvers whose search ends in a failure before the winner, where and why:
// "; musl stops at candidate 2 (NODATA) and fails".
func stops(e Explanation, o Outcome, answer func(Candidate) clusterdns.Answer) string {
	var out string
	for i, cand := range e.Candidates {
		if i >= o.Winner {
			break
		}
		var who []string
		for _, r := range o.Resolvers {
			if r.Fails && r.Candidate == i {
				who = append(who, r.Resolver)
			}
		}
		verb := "stops at candidate %d (%s) and fails"
		switch len(who) {
		case 0:
			continue
		case 1:
		default:
			verb = "stop at candidate %d (%s) and fail"
			who = []string{strings.Join(who[:len(who)-1], ", ") + " and " + who[len(who)-1]}
		}
		out += "; " + who[0] + " " + fmt.Sprintf(verb, i+1, answer(cand))
	}
	return out
}

// lookup is where resolver's search ends on e's candidates, each answering answer(c).
func lookup(resolver string, e Explanation, answer func(Candidate) clusterdns.Answer) ResolverOutcome {
	names := make([]string, len(e.Candidates))
	answers := make([]clusterdns.Answer, len(e.Candidates))
	for i, c := range e.Candidates {
		names[i], answers[i] = c.Name, answer(c)
	}
	return Walk(resolver, names, answers)
}

// Walk is where resolver's search ends when it sends names in turn and names[i] answers
// answers[i] to an A question (resolvers ask AAAA too: cluster DNS answers it alike, or
// NODATA). Records are in the answer's order unless Shuffled.
//   - NXDOMAIN: every resolver goes on to the next candidate;
//   - NODATA: glibc, Go and c-ares go on; musl stops and the lookup fails;
//   - SERVFAIL: glibc and Go go on; musl and c-ares stop and fail;
//   - REFUSED and any other rcode: Go goes on; glibc, musl and c-ares stop and fail;
//   - records: musl and Go take every address in the answer. glibc follows the CNAMEs
//     and takes the addresses of the last target that come after its CNAME; with none,
//     it fails without going on. c-ares takes them alike, and with none reads the answer
//     as NODATA and goes on;
//   - a name that goes upstream ends the search with what the upstream says.
func Walk(resolver string, names []string, answers []clusterdns.Answer) ResolverOutcome {
	return walk(resolver, names, answers, 0)
}

func walk(resolver string, names []string, answers []clusterdns.Answer, from int) ResolverOutcome {
	for i := from; i < len(names); i++ {
		a := answers[i]
		switch {
		case a.Rcode == clusterdns.Upstream:
			return ResolverOutcome{Resolver: resolver, Candidate: i}
		case a.Rcode == clusterdns.NXDomain:
			continue
		case a.Rcode != clusterdns.NoError:
			if resolver == Go || resolver == Glibc && a.Rcode == ServFail {
				continue
			}
			return ResolverOutcome{Resolver: resolver, Candidate: i, Fails: true}
		case a.NoData() && resolver == Musl:
			return ResolverOutcome{Resolver: resolver, Candidate: i, Fails: true}
		case !a.HasRecords():
			continue
		case resolver == Musl || resolver == Go:
			return ResolverOutcome{Resolver: resolver, Candidate: i, Addresses: a.Addresses(), Fails: len(a.Addresses()) == 0}
		}
		o := ResolverOutcome{Resolver: resolver, Candidate: i}
		var cname bool
		if len(a.CNAMEOneOf) > 0 || a.Shuffled {
			// In random order: the addresses of the target, when they come after the CNAME.
			targets := a.CNAMEOneOf
			if len(targets) == 0 {
				targets = []string{cnameTarget(names[i], a.Records)}
			}
			cname = len(a.CNAMEOneOf) > 0 || targets[0] != names[i]
			for _, t := range targets {
				o.Addresses = append(o.Addresses, ownedBy(t, a.Records)...)
			}
			o.OneOf = len(a.CNAMEOneOf) > 1 && len(o.Addresses) > 1
		} else {
			o.Addresses = inOrder(names[i], a.Records, resolver == CAres)
		}
		switch {
		case len(o.Addresses) == 0 && resolver == CAres:
			continue
		case len(o.Addresses) == 0:
			o.Fails = true
		case cname && a.Shuffled && resolver == CAres:
			next := walk(resolver, names, answers, i+1)
			o.OrNext = &next
		case cname && a.Shuffled:
			o.MayFail = true
		}
		return o
	}
	return ResolverOutcome{Resolver: resolver, Candidate: -1, Fails: true}
}

// inOrder are the addresses glibc or c-ares take from records in the answer's order: those
// of the name the CNAMEs so far lead to. glibc follows a CNAME of that name; c-ares 1.18
// follows any CNAME.
func inOrder(name string, records []clusterdns.Record, anyCNAME bool) []string {
	var out []string
	for _, r := range records {
		switch {
		case r.Type == clusterdns.TypeCNAME && (anyCNAME || r.Owner == name):
			name = r.Data
		case r.Owner == name && (r.Type == clusterdns.TypeA || r.Type == clusterdns.TypeAAAA):
			out = append(out, r.Data)
		}
	}
	return out
}

// ownedBy are the addresses of name among records.
func ownedBy(name string, records []clusterdns.Record) []string {
	var out []string
	for _, r := range records {
		if r.Owner == name && (r.Type == clusterdns.TypeA || r.Type == clusterdns.TypeAAAA) {
			out = append(out, r.Data)
		}
	}
	return out
}

// cnameTarget follows the CNAME records from name to the end of the chain.
func cnameTarget(name string, records []clusterdns.Record) string {
	for range records {
		next := ""
		for _, r := range records {
			if r.Type == clusterdns.TypeCNAME && r.Owner == name {
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
