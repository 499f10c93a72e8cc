package main

import (
	"io"
)

const offendersSynopsis = `nsguard offenders [-f FILE]... [FILE]... [--output table|json|github]

Reads CoreDNS logs (files, or standard input when none or -), such as the output of
  kubectl -n kube-system logs -l k8s-app=kube-dns --prefix --timestamps --since=24h
and prints one row per client and typed name that nsguard logged: what answered, how
often, when, what nsguard did and what to change, most answers first. Other lines are
skipped and counted. Exit status 1 when there is a row.

Memory is bounded whatever the input: lines over 64 KiB are skipped (and counted);
at most 10,000 rows are kept, and lines for rows first seen past them are counted
in the summary as not ranked; a row lists at most 8 answer kinds and 8 actions, and
counts its lines with others ("+N lines with others"). Time is linear in the input.`

func runOffenders(args []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("offenders", offendersSynopsis, stderr)
	var logs files
	fs.Var(&logs, "f", "CoreDNS log file, or - for stdin; repeatable, and read before the FILE arguments")
	output := fs.String("output", "table", "output format: table, json or github (workflow annotations)")
	fs.StringVar(output, "o", "table", "shorthand for --output")
	pos, err := parse(fs, args)
	if err != nil {
		return 2, err
	}
	write, ok := map[string]func(io.Writer, offendersReport) error{
		"table": writeOffendersTable, "json": writeOffendersJSON, "github": writeOffendersGitHub,
	}[*output]
	if !ok {
		return 2, usagef("--output %q: want table, json or github", *output)
	}
	names := append(logs, pos...)
	if len(names) == 0 {
		names = files{"-"}
	}
	t := newTally()
	for _, name := range names {
		if err := t.readFile(name, stdin); err != nil {
			return 2, err
		}
	}
	rep := t.report()
	if err := write(stdout, rep); err != nil {
		return 2, err
	}
	if len(rep.Rows) > 0 {
		return 1, nil
	}
	return 0, nil
}
