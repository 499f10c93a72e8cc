package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// craftedLine is an answer line for client c, typed name n and answer and action a.
func craftedLine(c, n int, a string) string {
	return fmt.Sprintf(`[WARNING] plugin/nsguard: answer through namespace "n%d": client=10.0.%d.%d question="n%d.svc.cluster.local. A" typed="n%d" answer=%s records="" action=%s fix="f"`+"\n",
		n, c/256, c%256, n, n, a, a)
}

// craftedLog is lines lines, each with an answer and action value of its own, in one row
// or each in a row of its own: what made offenders quadratic, and what would grow it
// without bound.
func craftedLog(lines int, oneRow bool) string {
	var b strings.Builder
	for i := lines; i > 0; i-- {
		c, n := 0, 0
		if !oneRow {
			c, n = i%50000, i/50000
		}
		b.WriteString(craftedLine(c, n, fmt.Sprintf("v%09d", i)))
	}
	return b.String()
}

func TestOffendersBounds(t *testing.T) {
	long := strings.Repeat("x", maxValueLen+1)
	tests := []struct {
		name                  string
		log                   string
		rows                  int
		unranked              int
		unrankedAnswers       uint64
		answers, otherAnswers int // of the first row
		actions, otherActions int
	}{
		{"values per row", craftedLog(1000, true), 1, 0, 0, maxValues, 1000 - maxValues, maxValues, 1000 - maxValues},
		{"a value too long to list", craftedLine(0, 0, "nodata") + craftedLine(0, 0, long), 1, 0, 0, 1, 1, 1, 1},
		{"rows", craftedLog(maxRows+25, false), maxRows, 25, 25, 1, 0, 1, 0},
		{"unranked repeats", craftedLog(maxRows, false) + strings.Replace(craftedLine(99, 99, "nodata"), `fix="f"`, `fix="f" repeats=4`, 1),
			maxRows, 1, 5, 1, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, r := offendersJSON(t, tt.log)
			s := r.Summary
			if code != 1 || s.Rows != tt.rows || s.UnrankedLines != tt.unranked || s.UnrankedAnswers != tt.unrankedAnswers {
				t.Fatalf("exit %d, summary %+v", code, s)
			}
			o := r.Rows[0]
			if len(o.Answers) != tt.answers || o.OtherAnswers != uint64(tt.otherAnswers) ||
				len(o.Actions) != tt.actions || o.OtherActions != uint64(tt.otherActions) {
				t.Errorf("row %d answers (+%d), %d actions (+%d)", len(o.Answers), o.OtherAnswers, len(o.Actions), o.OtherActions)
			}
			if s.Answers+s.UnrankedAnswers != uint64(s.Lines)+countRepeats(tt.log) {
				t.Errorf("answers %d + unranked %d, lines %d: an answer lost", s.Answers, s.UnrankedAnswers, s.Lines)
			}
		})
	}
	_, out, _ := runCLI(craftedLog(20, true)+craftedLog(maxRows+2, false), "offenders")
	for _, want := range []string{"3 more lines (3 answers) for rows past the first 10000, not ranked", "(+12 lines with others)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

func countRepeats(log string) uint64 {
	if strings.Contains(log, "repeats=4") {
		return 4
	}
	return 0
}

// BenchmarkOffenders reads crafted logs of 10,000 and 100,000 lines; the time and memory per
// line must not grow with the log.
func BenchmarkOffenders(b *testing.B) {
	for _, oneRow := range []bool{true, false} {
		for _, lines := range []int{10_000, 100_000} {
			log := craftedLog(lines, oneRow)
			shape := "values-in-one-row"
			if !oneRow {
				shape = "rows"
			}
			b.Run(fmt.Sprintf("shape=%s/lines=%d", shape, lines), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(log)))
				for b.Loop() {
					t := newTally()
					if err := t.read("bench", strings.NewReader(log)); err != nil {
						b.Fatal(err)
					}
					t.report()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(lines), "ns/line")
			})
		}
	}
}

// rowLine is an answer line of row r: records and fix of the given lengths, at second sec.
func rowLine(r, sec, records, fix int) string {
	return fmt.Sprintf(`2026-12-02T10:00:%02dZ [WARNING] plugin/nsguard: answer through namespace "n%d": client=10.0.%d.%d pod=a/p%d question="n%d.svc.cluster.local. A" typed="n%d" answer=records records="%s" action=logged fix="%s"`+"\n",
		sec, r, r/256, r%256, r, r, r, strings.Repeat("r", records), strings.Repeat("f", fix))
}

// TestOffendersRowMemory: a row keeps one line's worth of text, however its lines come.
// Each row here has a line whose records are long, then a later one without records whose
// fix is long: the row must not hold both lines, nor both long values.
func TestOffendersRowMemory(t *testing.T) {
	const rows, long = 200, 60 << 10
	pr, pw := io.Pipe()
	go func() {
		for r := range rows {
			io.WriteString(pw, rowLine(r, 1, long, 10))
			io.WriteString(pw, strings.Replace(rowLine(r, 2, 0, long), "answer=records", "answer=nodata", 1))
		}
		pw.Close()
	}()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tl := newTally()
	if err := tl.read("crafted", pr); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perRow := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / rows
	runtime.KeepAlive(tl)
	if len(tl.rows) != rows || tl.summary.Skipped != 0 {
		t.Fatalf("%d rows, %d lines skipped; want %d, 0", len(tl.rows), tl.summary.Skipped, rows)
	}
	t.Logf("%d bytes a row for lines of %d KiB", perRow, long>>10)
	if perRow > maxLogLine+2<<10 {
		t.Errorf("a row keeps %d KiB for lines of %d KiB: more than one line (%d KiB)", perRow>>10, long>>10, maxLogLine>>10)
	}
}

// TestOffendersRowLine: what a row says (client, records, fix) comes from one line: its
// latest line with records, or its latest line while none has records.
func TestOffendersRowLine(t *testing.T) {
	withClient := func(line, client string) string { return strings.Replace(line, "client=10.0.0.0", "client="+client, 1) }
	noRecords := func(line string) string { return strings.Replace(line, "answer=records", "answer=nodata", 1) }
	tests := []struct {
		name                 string
		log                  string
		client, records, fix string
		answers              []string
	}{
		{"the latest line", withClient(rowLine(0, 1, 1, 1), "a") + withClient(rowLine(0, 2, 2, 2), "b"), "b", "rr", "ff", []string{"records"}},
		{"the latest line, out of order", withClient(rowLine(0, 2, 2, 2), "b") + withClient(rowLine(0, 1, 1, 1), "a"), "b", "rr", "ff", []string{"records"}},
		{"a later line without records", withClient(rowLine(0, 1, 1, 1), "a") + withClient(noRecords(rowLine(0, 2, 0, 2)), "b"), "a", "r", "f", []string{"nodata", "records"}},
		{"no line with records", withClient(noRecords(rowLine(0, 1, 0, 1)), "a") + withClient(noRecords(rowLine(0, 2, 0, 2)), "b"), "b", "", "ff", []string{"nodata"}},
		{"an earlier line with records", withClient(noRecords(rowLine(0, 2, 0, 2)), "b") + withClient(rowLine(0, 1, 1, 1), "a"), "a", "r", "f", []string{"nodata", "records"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := offendersJSON(t, tt.log)
			if len(r.Rows) != 1 {
				t.Fatalf("%d rows", len(r.Rows))
			}
			o := r.Rows[0]
			if o.Client != tt.client || o.Records != tt.records || o.Fix != tt.fix || !slices.Equal(o.Answers, tt.answers) || o.Count != 2 {
				t.Errorf("client %q records %q fix %q answers %q count %d; want %q %q %q %q 2", o.Client, o.Records, o.Fix, o.Answers, o.Count,
					tt.client, tt.records, tt.fix, tt.answers)
			}
		})
	}
}
