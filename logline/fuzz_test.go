package logline

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// FuzzParse reads any line. What it reads, written again, must read back the same, on one
// line: the writer and the reader agree on every value the reader accepts.
func FuzzParse(f *testing.F) {
	for _, s := range []string{apexLine, shadowLine, apexLine + " repeats=3 suppressed=2", apexLine + ` zone="x"`,
		strings.Replace(apexLine, "answer=nodata", `answer="a b"`, 1), Prefix + `answer through namespace "\x00": client=""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		e, err := Parse(line)
		if err != nil {
			return
		}
		again := Prefix + e.String()
		if strings.ContainsAny(again, "\n\r") {
			t.Fatalf("a line break written: %q", again)
		}
		e2, err := Parse(again)
		if err != nil || e2 != e {
			t.Fatalf("%v\nread   %+v\nreread %+v\nfrom   %q", err, e, e2, again)
		}
	})
}

// jsonRecord writes e as CoreDNS -log-format json and nsguard write it: one JSON record.
func jsonRecord(e Entry) string {
	var b strings.Builder
	r := slog.NewRecord(time.Date(2026, 12, 2, 21, 34, 35, 0, time.UTC), slog.LevelWarn, e.Msg(), 0)
	r.AddAttrs(slog.String("plugin", "nsguard"))
	r.AddAttrs(e.Attrs()...)
	_ = slog.NewJSONHandler(&b, nil).Handle(context.Background(), r)
	return strings.TrimSuffix(b.String(), "\n")
}

// FuzzParseJSON reads any record. What it reads, written again as a record, must read back
// the same, on one line.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{jsonRecord(apexEntry), jsonRecord(shadowEntry), jsonRecord(with(apexEntry, func(e *Entry) { e.Repeats, e.Suppressed = 3, 2 })),
		strings.Replace(jsonRecord(apexEntry), `"typed":"my-app"`, `"typed":7`, 1), jsonRecord(apexEntry)[:150],
		`{"plugin":"nsguard","msg":"answer through namespace \"\u0000\"","client":""}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		e, err := ParseJSON(line)
		if err != nil {
			return
		}
		again := jsonRecord(e)
		if strings.ContainsAny(again, "\n\r") {
			t.Fatalf("a line break written: %q", again)
		}
		e2, err := ParseJSON(again)
		if err != nil || e2 != e {
			t.Fatalf("%v\nread   %+v\nreread %+v\nfrom   %q", err, e, e2, again)
		}
	})
}
