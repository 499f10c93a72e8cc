package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/clusterdns"
)

const auditSynopsis = `nsguard audit [-f PATH]... [--kubeconfig FILE] [--context NAME] [-n NAMESPACE] [--zone ZONE]
                     [-o table|json|github] [--fail-on error|warning|info|none]

Lists every finding: namespace-captures-service, endpoint-shadows-service,
alias-through-namespace, alias-dangling, alias-loop, reserved-namespace. With -n,
only the findings whose clients include pods in NAMESPACE. The JSON
schema is documented in package github.com/nsguard/nsguard/audit (go doc ./audit).

Memory: each document is read whole, one at a time. A JSON document takes up to
about 5 times its size (a List's items are held once more); a YAML document up to
about 50 times, so one over 4 MiB fails the load (exit status 2, naming the file and
the document): use kubectl get -o json, or split the file. Lists in Lists nest at most
4 deep.`

func auditCommand(code *int) *cobra.Command {
	var (
		src    source
		output string
		failOn string
	)
	c := newCommand("audit", auditSynopsis, code, func(c *cobra.Command, pos []string) (int, error) {
		return runAudit(&src, output, failOn, src.namespace(), pos, c.InOrStdin(), c.OutOrStdout())
	})
	fs := c.Flags()
	src.register(fs, "only findings whose clients include pods in this namespace")
	fs.StringVarP(&output, "output", "o", "table", "output format: table, json or github (workflow annotations)")
	fs.StringVar(&failOn, "fail-on", "warning", "exit 1 on a finding of this severity or above: error, warning, info or none")
	return c
}

func runAudit(src *source, output, failOn, namespace string, pos []string, stdin io.Reader, stdout io.Writer) (int, error) {
	if len(pos) > 0 {
		return 2, usagef("audit takes no arguments, got %q (manifests go after -f)", pos[0])
	}
	if err := src.check(); err != nil {
		return 2, err
	}
	namespace, err := checkNamespace(namespace)
	if err != nil {
		return 2, err
	}
	threshold := 0
	switch failOn {
	case "none":
		threshold = 99
	case "error", "warning", "info":
		threshold = audit.Severity(failOn).Rank()
	default:
		return 2, usagef("--fail-on %q: want error, warning, info or none", failOn)
	}
	write, ok := map[string]func(io.Writer, []audit.Finding, string) error{
		"table": writeTable, "json": writeJSON, "github": writeGitHub,
	}[output]
	if !ok {
		return 2, usagef("--output %q: want table, json or github", output)
	}
	c, err := src.load(stdin)
	if err != nil {
		return 2, err
	}
	findings := audit.Audit(c.Names(), src.zone)
	if namespace != "" {
		findings = slices.DeleteFunc(findings, func(f audit.Finding) bool { return !affects(f.Clients, namespace) })
	}
	if err := write(stdout, findings, strings.TrimSuffix(src.zone, ".")); err != nil {
		return 2, err
	}
	for _, f := range findings {
		if f.Severity.Rank() >= threshold {
			return 1, nil
		}
	}
	return 0, nil
}

// affects says whether pods in namespace ns are among a finding's clients.
func affects(c audit.Clients, ns string) bool {
	switch c.Scope {
	case "all":
		return true
	case "all-except":
		return !slices.Contains(c.Namespaces, ns)
	}
	return slices.Contains(c.Namespaces, ns)
}

func summary(findings []audit.Finding) map[string]int {
	m := map[string]int{"error": 0, "warning": 0, "info": 0}
	for _, f := range findings {
		m[string(f.Severity)]++
	}
	return m
}

func writeJSON(w io.Writer, findings []audit.Finding, zone string) error {
	if findings == nil {
		findings = []audit.Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Version  int             `json:"version"`
		Zone     string          `json:"zone"`
		Summary  map[string]int  `json:"summary"`
		Findings []audit.Finding `json:"findings"`
	}{2, zone, summary(findings), findings})
}

func writeTable(w io.Writer, findings []audit.Finding, zone string) error {
	if len(findings) == 0 {
		_, err := fmt.Fprintln(w, "no findings")
		return err
	}
	var b strings.Builder
	for i, f := range findings {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%-7s  %s\n", strings.ToUpper(string(f.Severity)), f.Check)
		fmt.Fprintf(&b, "  %-9s %s\n", "what:", f.Message)
		objs := make([]string, len(f.Objects))
		for j, o := range f.Objects {
			objs[j] = o.String()
		}
		fmt.Fprintf(&b, "  %-9s %s\n", "objects:", strings.Join(objs, ", "))
		fmt.Fprintf(&b, "  %-9s %s\n", "clients:", f.Clients)
		if f.Name != "" && f.CoreDNS != nil {
			fmt.Fprintf(&b, "  %-9s %s A -> %s\n", "coredns:", f.Name, describe(*f.CoreDNS))
			fmt.Fprintf(&b, "  %-9s %s A -> %s\n", "kube-dns:", f.Name, describe(*f.KubeDNS))
		}
		fmt.Fprintf(&b, "  %-9s %s\n", "fix:", f.Fix)
	}
	s := summary(findings)
	fmt.Fprintf(&b, "\n%d findings: %d error, %d warning, %d info\n", len(findings), s["error"], s["warning"], s["info"])
	_, err := io.WriteString(w, b.String())
	return err
}

func describe(a clusterdns.Answer) string {
	s := a.String()
	if a.Rcode == clusterdns.NoError && len(a.Records) > 0 {
		s = "NOERROR " + s
	}
	if a.Note != "" {
		s += " (" + a.Note + ")"
	}
	return s
}

// writeGitHub prints workflow commands; GitHub turns them into annotations on the
// manifest that holds the first object with a file.
func writeGitHub(w io.Writer, findings []audit.Finding, zone string) error {
	for _, f := range findings {
		level := "warning"
		switch f.Severity {
		case audit.Error:
			level = "error"
		case audit.Info:
			level = "notice"
		}
		props := []string{}
		for _, o := range f.Objects {
			if file, _, ok := strings.Cut(o.Source, ": document "); ok && o.Source != file {
				props = append(props, "file="+escapeProperty(file))
				break
			}
		}
		props = append(props, "title="+escapeProperty("nsguard "+f.Check))
		msg := f.Message + "\nclients: " + f.Clients.String() + "\nfix: " + f.Fix
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", level, strings.Join(props, ","), escapeData(msg)); err != nil {
			return err
		}
	}
	return nil
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
