package main

import (
	"io"
	"slices"

	"github.com/spf13/cobra"
)

const offendersSynopsis = `nsguard offenders [-f FILE]... [FILE]... [-n NAMESPACE] [-o table|json|github]

Reads CoreDNS logs (files, or standard input when none or -), such as the output of
  kubectl -n kube-system logs -l k8s-app=kube-dns --tail=-1 --prefix --timestamps --since=24h
and prints one row per client and typed name that nsguard logged: what answered, how
often, when, what nsguard did and what to change, most answers first; with -n, only
the rows of pods in NAMESPACE (the summary still counts every line). Other lines are
skipped and counted. Exit status 1 when there is a row.

Memory is bounded whatever the input: lines over 64 KiB are skipped (and counted);
at most 10,000 rows are kept, each with what one of its lines says (its latest with
records, else its latest), and lines for rows first seen past them are counted in the
summary as not ranked; a row lists at most 8 answer kinds and 8 actions, and counts
its lines with others ("+N lines with others"). Time is linear in the input.`

func offendersCommand(code *int) *cobra.Command {
	var (
		logs              []string
		output, namespace string
	)
	c := newCommand("offenders [FILE]...", offendersSynopsis, code, func(c *cobra.Command, pos []string) (int, error) {
		return runOffenders(logs, output, namespace, pos, c.InOrStdin(), c.OutOrStdout())
	})
	fs := c.Flags()
	fs.StringArrayVarP(&logs, "filename", "f", nil, "CoreDNS log file, or - for stdin; repeatable, and read before the FILE arguments")
	fs.StringVarP(&output, "output", "o", "table", "output format: table, json or github (workflow annotations)")
	fs.StringVarP(&namespace, "namespace", "n", "", "only the rows of pods in this namespace")
	return c
}

func runOffenders(logs []string, output, namespace string, pos []string, stdin io.Reader, stdout io.Writer) (int, error) {
	write, ok := map[string]func(io.Writer, offendersReport) error{
		"table": writeOffendersTable, "json": writeOffendersJSON, "github": writeOffendersGitHub,
	}[output]
	if !ok {
		return 2, usagef("--output %q: want table, json or github", output)
	}
	namespace, err := checkNamespace(namespace)
	if err != nil {
		return 2, err
	}
	names := append(logs, pos...)
	if len(names) == 0 {
		names = []string{"-"}
	}
	t := newTally()
	for _, name := range names {
		if err := t.readFile(name, stdin); err != nil {
			return 2, err
		}
	}
	rep := t.report()
	if namespace != "" {
		rep.Rows = slices.DeleteFunc(rep.Rows, func(o *offender) bool { return o.Namespace != namespace })
		rep.Summary.Rows, rep.Summary.Answers = len(rep.Rows), 0
		for _, o := range rep.Rows {
			rep.Summary.Answers = addSat(rep.Summary.Answers, o.Count)
		}
	}
	if err := write(stdout, rep); err != nil {
		return 2, err
	}
	if len(rep.Rows) > 0 {
		return 1, nil
	}
	return 0, nil
}
