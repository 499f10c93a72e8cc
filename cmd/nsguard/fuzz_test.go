package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// FuzzOffenders reads any log: offenders must not fail on it, and must account for every
// line and answer it read.
func FuzzOffenders(f *testing.F) {
	f.Add(mustReadF(f, kubectlLog))
	f.Add(mustReadF(f, nodeLocalLog))
	f.Add(apexLine + " repeats=18446744073709551615\n" + shadowLine + "\r\n" + apexLine[:90])
	f.Add("2026-12-02T21:34:35Z 2026/12/02 21:34:35 " + apexLine + " suppressed=3\n[pod/x/y] " + shadowLine)
	f.Add(apexRecord + "\n[pod/x/y] 2026-12-02T21:34:35Z " + shadowRecord + "\n" + apexLine + "\n" + apexRecord[:120])
	f.Add(strings.Replace(apexRecord, `}`, `,"repeats":18446744073709551615}`, 1) + "\r\n" + strings.Replace(apexRecord, `"fix"`, `"fix":1,"x"`, 1))
	f.Fuzz(func(t *testing.T, log string) {
		tl := newTally()
		if err := tl.read("fuzz", strings.NewReader(log)); err != nil {
			t.Fatal(err)
		}
		r := tl.report()
		if r.Summary.Rows != len(r.Rows) || r.Summary.Broken > r.Summary.Skipped {
			t.Fatalf("summary %+v for %d rows", r.Summary, len(r.Rows))
		}
		if lines := r.Summary.Lines + r.Summary.Skipped; lines > strings.Count(log, "\n")+1 {
			t.Fatalf("%d lines counted in %d", lines, strings.Count(log, "\n")+1)
		}
		for _, w := range []func(io.Writer, offendersReport) error{writeOffendersTable, writeOffendersJSON, writeOffendersGitHub} {
			var b strings.Builder
			if err := w(&b, r); err != nil {
				t.Fatal(err)
			}
			// A client's bytes must not reach a terminal or a workflow raw.
			if strings.ContainsRune(b.String(), 0x1b) {
				t.Fatalf("raw control characters in %q", b.String())
			}
		}
	})
}

func mustReadF(f *testing.F, name string) string {
	b, err := os.ReadFile(name)
	if err != nil {
		f.Fatal(err)
	}
	return string(b)
}
