package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/clusterdns"
)

const explainSynopsis = `nsguard explain NAME -n NAMESPACE [-f PATH]... [--kubeconfig FILE] [--context NAME]
                       [--ndots N] [--search "DOMAIN ..."] [--zone ZONE] [-o table|json]

Prints each search candidate a pod in NAMESPACE sends for NAME and what CoreDNS and
kube-dns answer to it (A question), marks the candidate that wins and says whether
that is what NAME most likely meant. Exit status 1 when it is not.`

func explainCommand(code *int) *cobra.Command {
	var (
		src                     source
		from, namespace, output string
		search                  string
		ndots                   int
	)
	c := newCommand("explain NAME", explainSynopsis, code, func(c *cobra.Command, pos []string) (int, error) {
		if from != "" && namespace != "" && from != namespace {
			return 2, usagef("-n %q and --from %q: give one", namespace, from)
		}
		return runExplain(&src, cmp.Or(namespace, from), output, search, ndots, pos, c.InOrStdin(), c.OutOrStdout())
	})
	fs := c.Flags()
	src.register(fs)
	fs.StringVarP(&namespace, "namespace", "n", "", "namespace of the pod that looks the name up (required)")
	fs.StringVar(&from, "from", "", "the same as --namespace")
	fs.IntVar(&ndots, "ndots", 5, "the resolver's ndots option")
	fs.StringVar(&search, "search", "", `search domains, space separated (default "<namespace>.svc.<zone> svc.<zone> <zone>")`)
	fs.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return c
}

func runExplain(src *source, from, output, search string, ndots int, pos []string, stdin io.Reader, stdout io.Writer) (int, error) {
	switch {
	case len(pos) != 1:
		return 2, usagef("explain takes one NAME, got %d arguments", len(pos))
	case from == "":
		return 2, usagef("-n NAMESPACE (or --from) is required")
	case !clusterdns.IsDNSLabel(from):
		return 2, usagef("--namespace %q: not a namespace name", from)
	case ndots < 0 || ndots > 15:
		return 2, usagef("--ndots %d: want 0 to 15", ndots)
	case output != "table" && output != "json":
		return 2, usagef("--output %q: want table or json", output)
	}
	name := pos[0]
	if err := checkName(name); err != nil {
		return 2, err
	}
	if err := src.check(); err != nil {
		return 2, err
	}
	opts := audit.ExplainOptions{Zone: src.zone, Ndots: ndots}
	if ndots == 0 {
		opts.Ndots = -1 // the package reads 0 as "default"
	}
	if search != "" {
		opts.Search = strings.Fields(search)
	}
	c, err := src.load(stdin)
	if err != nil {
		return 2, err
	}
	e := audit.Explain(c, name, from, opts)
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

func writeExplanation(w io.Writer, e audit.Explanation) error {
	fmt.Fprintf(w, "%s from namespace %s (ndots %d, search %s)\n", e.Name, e.From, e.Ndots, strings.Join(e.Search, " "))
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
		fmt.Fprintf(tw, "%s\t%s\t%s\n", core.Resolver, gets(core), gets(e.KubeDNS.Resolvers[i]))
	}
	return tw.Flush()
}

// gets says what a resolver's lookup gets, and where its search ends.
func gets(r audit.ResolverOutcome) string {
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
	return fmt.Sprintf("candidate %d: %s", r.Candidate+1, s)
}

func mark(i int, o audit.Outcome) string {
	switch {
	case i == o.Winner && o.Meant:
		return "  <- wins"
	case i == o.Winner:
		return "  <- wins (wrong)"
	case i == o.MuslStop:
		return "  <- musl stops"
	}
	return ""
}
