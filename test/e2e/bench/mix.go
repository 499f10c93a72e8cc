package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/miekg/dns"
)

// The bench cluster: the incident's objects, plus benchNamespaces namespaces of
// benchServices ClusterIP Services each, with a named port for SRV questions.
const (
	benchNamespaces = 200
	benchServices   = 5
	mixSize         = 2000
)

func benchNamespace(i int) string { return fmt.Sprintf("bench-%d", i) }
func benchService(j int) string   { return fmt.Sprintf("svc%d", j) }

// question is one line of the mix and what the kubernetes plugin answers it with.
type question struct {
	name  string
	qtype uint16
	class string // nxdomain, service, apex, pod or srv
}

// shares is a mix: the classes of its questions, in hundredths.
type shares []struct {
	class string
	share int
}

// everyday is what a pod with ndots:5 sends, in hundredths: its search list makes NXDOMAIN
// candidates of most names before one answers.
var everyday = shares{{"nxdomain", 45}, {"service", 35}, {"apex", 10}, {"pod", 5}, {"srv", 5}}

// incident is the same pod while namespaces capture short names: half its lookups are of a
// short name X that a namespace X captures, and each walks the search list: X.<its
// namespace>.svc (NXDOMAIN), X.svc (the namespace apex, NODATA) and X.<zone> (NXDOMAIN). The
// apexes are a fifth of its questions, the walk's two other candidates another fifth.
var incident = shares{{"apex", 20}, {"walk", 20}, {"nxdomain", 25}, {"service", 25}, {"pod", 5}, {"srv", 5}}

// makeMix returns mixSize distinct questions in the shares mix, in a fixed random order, as
// a pod in namespace client sends them. Client k draws its own order of its own questions;
// client 0 of new-namespace-1 is the chain workload's mix.
func makeMix(mix shares, client string, k int) []question {
	rng := rand.New(rand.NewPCG(1, 2+uint64(k)))
	var out []question
	seen := map[string]bool{}
	add := func(q question) bool {
		key := q.name + " " + dns.TypeToString[q.qtype]
		if seen[key] {
			return false
		}
		seen[key] = true
		out = append(out, q)
		return true
	}
	ns := func() string { return benchNamespace(rng.IntN(benchNamespaces)) }
	svc := func() string { return benchService(rng.IntN(benchServices)) }
	gen := map[string]func() question{
		// The first, third and later candidates of names typed in new-namespace-1.
		"nxdomain": func() question {
			name := []string{
				svc() + "." + client + ".svc.cluster.local.",
				fmt.Sprintf("api-%d.github.com.svc.cluster.local.", rng.IntN(100000)),
				svc() + "." + ns() + ".cluster.local.",
				svc() + "." + ns() + "." + client + ".svc.cluster.local.",
			}[rng.IntN(4)]
			return question{name, []uint16{dns.TypeA, dns.TypeAAAA}[rng.IntN(2)], "nxdomain"}
		},
		// The walk's first and third candidates of a captured name X (a namespace's name).
		"walk": func() question {
			name := []string{ns() + "." + client + ".svc.cluster.local.", ns() + ".cluster.local."}[rng.IntN(2)]
			return question{name, []uint16{dns.TypeA, dns.TypeAAAA}[rng.IntN(2)], "nxdomain"}
		},
		"service": func() question { return question{svc() + "." + ns() + ".svc.cluster.local.", dns.TypeA, "service"} },
		"apex": func() question {
			return question{ns() + ".svc.cluster.local.", []uint16{dns.TypeA, dns.TypeAAAA}[rng.IntN(2)], "apex"}
		},
		"pod": func() question {
			return question{fmt.Sprintf("10-244-%d-%d.%s.pod.cluster.local.", rng.IntN(256), 1+rng.IntN(254), ns()), dns.TypeA, "pod"}
		},
		"srv": func() question {
			return question{"_http._tcp." + svc() + "." + ns() + ".svc.cluster.local.", dns.TypeSRV, "srv"}
		},
	}
	for _, s := range mix {
		for n := 0; n < mixSize*s.share/100; {
			if add(gen[s.class]()) {
				n++
			}
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// writeMix writes the mix in dnsperf's format.
func writeMix(path string, mix []question) error {
	var b strings.Builder
	for _, q := range mix {
		fmt.Fprintf(&b, "%s %s\n", q.name, dns.TypeToString[q.qtype])
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// expected is what the kubernetes plugin answers q with: NXDOMAIN, NODATA, or records. A
// configuration that refuses namespace apexes answers them NXDOMAIN.
func expected(q question, refusesApex bool) string {
	switch {
	case q.class == "nxdomain", q.class == "apex" && refusesApex:
		return "NXDOMAIN"
	case q.class == "apex":
		return "NODATA"
	}
	return "records"
}

// answered says what m is, in expected's words.
func answered(m *dns.Msg) string {
	switch {
	case m.Rcode != dns.RcodeSuccess:
		return dns.RcodeToString[m.Rcode]
	case len(m.Answer) == 0:
		return "NODATA"
	}
	return "records"
}
