package main

import (
	"fmt"
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
