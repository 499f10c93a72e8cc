package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
)

const explainSynopsis = `nsguard explain NAME -n NAMESPACE [-f PATH]... [--kubeconfig FILE] [--context NAME]
                       [--ndots N] [--search "DOMAIN ..."] [--zone ZONE]
                       [--mode log|refuse] [--rcode NXDOMAIN|REFUSED] [-o table|json]

Prints each search candidate a pod in NAMESPACE sends for NAME and what CoreDNS and
kube-dns answer to it (A question), marks the candidate that wins and says whether
that is what NAME most likely meant, and what glibc, musl, Go and c-ares (` + model.CAresVersion + `)
each get. --mode refuse answers as nsguard in mode refuse does, with --rcode.
Exit status 1 when the winner is not what NAME most likely meant.`

func explainCommand(code *int) *cobra.Command {
	var (
		src                 source
		from, output        string
		search, mode, rcode string
		ndots               int
	)
	c := newCommand("explain NAME", explainSynopsis, code, func(c *cobra.Command, pos []string) (int, error) {
		namespace := src.namespace()
		if from != "" && namespace != "" && from != namespace {
			return 2, usagef("-n %q and --from %q: give one", namespace, from)
		}
		if namespace == "" && from == "" && len(src.files) == 0 {
			// Reading the live cluster, as kubectl does: the context's namespace.
			ns, err := src.contextNamespace()
			if err != nil {
				return 2, err
			}
			namespace = ns
		}
		refuse, err := refuseRcode(mode, rcode, c.Flags().Changed("rcode"))
		if err != nil {
			return 2, err
		}
		return runExplain(&src, cmp.Or(namespace, from), output, search, refuse, ndots, pos, c.InOrStdin(), c.OutOrStdout())
	})
	fs := c.Flags()
	src.register(fs, "namespace of the pod that looks the name up (required with -f; else the context's, as kubectl takes it)")
	fs.StringVar(&from, "from", "", "the same as --namespace")
	fs.IntVar(&ndots, "ndots", 5, "the resolver's ndots option")
	fs.StringVar(&search, "search", "", `search domains, space separated (default "<namespace>.svc.<zone> svc.<zone> <zone>")`)
	fs.StringVar(&mode, "mode", "log", "nsguard's mode in front of cluster DNS: log (answers unchanged) or refuse")
	fs.StringVar(&rcode, "rcode", clusterdns.NXDomain, "what mode refuse answers: NXDOMAIN or REFUSED")
	fs.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return c
}

// refuseRcode is the rcode nsguard refuses namespace apex answers with, as the Corefile's
// mode and rcode say; "" for mode log.
func refuseRcode(mode, rcode string, rcodeSet bool) (string, error) {
	switch rcode {
	case clusterdns.NXDomain, model.Refused:
	default:
		return "", usagef("--rcode %q: want NXDOMAIN or REFUSED", rcode)
	}
	switch mode {
	case "log":
		if rcodeSet {
			return "", usagef("--rcode %s: only with --mode refuse", rcode)
		}
		return "", nil
	case "refuse":
		return rcode, nil
	}
	return "", usagef("--mode %q: want log or refuse", mode)
}

func runExplain(src *source, from, output, search, refuse string, ndots int, pos []string, stdin io.Reader, stdout io.Writer) (int, error) {
	switch {
	case len(pos) != 1:
		return 2, usagef("explain takes one NAME, got %d arguments", len(pos))
	case from == "":
		return 2, usagef("-n NAMESPACE (or --from) is required")
	case ndots < 0 || ndots > 15:
		return 2, usagef("--ndots %d: want 0 to 15", ndots)
	case output != "table" && output != "json":
		return 2, usagef("--output %q: want table or json", output)
	}
	from, err := checkNamespace(from)
	if err != nil {
		return 2, err
	}
	name := pos[0]
	if err := checkName(name); err != nil {
		return 2, err
	}
	if err := src.check(); err != nil {
		return 2, err
	}
	opts := model.ExplainOptions{Zone: src.zone, Ndots: ndots, Refuse: refuse}
	if ndots == 0 {
		opts.Ndots = -1 // the package reads 0 as "default"
	}
	if search != "" {
		opts.Search = strings.Fields(search)
		for _, d := range opts.Search {
			if err := clusterdns.CheckName(d); err != nil {
				return 2, usagef("--search domain %q: %v", d, err)
			}
		}
	}
	c, err := src.load(stdin)
	if err != nil {
		return 2, err
	}
	e := model.Explain(c, name, from, opts)
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(e)
	} else {
		err = writeExplanation(stdout, e)
	}
	if err != nil {
		return 2, err
	}
	if !e.CoreDNS.Meant || !e.KubeDNS.Meant {
		return 1, nil
	}
	return 0, nil
}

func checkName(name string) error {
	if err := clusterdns.CheckName(name); err != nil {
		return usagef("NAME %q: %v", name, err)
	}
	return nil
}

func writeExplanation(w io.Writer, e model.Explanation) error {
	fmt.Fprintf(w, "%s from namespace %s (ndots %d, search %s)\n", e.Name, e.From, e.Ndots, strings.Join(e.Search, " "))
	if e.Refuse != "" {
		fmt.Fprintf(w, "nsguard in mode refuse answers %s for a namespace apex\n", e.Refuse)
	}
	fmt.Fprintf(w, "most likely meant: %s\n\n", e.Meant)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tCANDIDATE\tREAD AS\tCOREDNS\tKUBE-DNS")
	for i, c := range e.Candidates {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s%s\t%s%s\n", i+1, c.Name, c.ReadAs,
			c.CoreDNS, mark(i, e.CoreDNS), c.KubeDNS, mark(i, e.KubeDNS))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\ncoredns:  %s\nkube-dns: %s\n\n", e.CoreDNS.Verdict, e.KubeDNS.Verdict); err != nil {
		return err
	}
	fmt.Fprintln(tw, "RESOLVER\tWITH COREDNS\tWITH KUBE-DNS")
	for i, core := range e.CoreDNS.Resolvers {
		name := core.Resolver
		if name == model.CAres {
			name += " " + model.CAresVersion
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, gets(core), gets(e.KubeDNS.Resolvers[i]))
	}
	return tw.Flush()
}

// gets says what a resolver's lookup gets, and where its search ends.
func gets(r model.ResolverOutcome) string {
	var s string
	switch {
	case r.Candidate < 0:
		return "fails: no candidate answers"
	case r.Fails:
		s = "fails"
	case len(r.Addresses) == 0:
		s = "the upstream's answer"
	case r.OneOf:
		s = strings.Join(r.Addresses, " or ")
	default:
		s = strings.Join(r.Addresses, " ")
	}
	if r.MayFail {
		s += ", or fails"
	}
	if !r.Fails && !r.Meant {
		s += " (wrong)"
	}
	s = fmt.Sprintf("candidate %d: %s", r.Candidate+1, s)
	if r.OrNext != nil {
		s += ", or on to " + gets(*r.OrNext)
	}
	return s
}

func mark(i int, o model.Outcome) string {
	switch {
	case i == o.Winner && o.Meant:
		return "  <- wins"
	case i == o.Winner:
		return "  <- wins (wrong)"
	case i > o.Winner && o.Winner >= 0:
		return ""
	}
	var who []string
	for _, r := range o.Resolvers {
		if r.Fails && r.Candidate == i {
			who = append(who, r.Resolver)
		}
	}
	switch len(who) {
	case 0:
		return ""
	case 1:
		return "  <- " + who[0] + " stops"
	}
	return "  <- " + strings.Join(who, ", ") + " stop"
}
