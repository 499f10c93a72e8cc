package logline

import (
	"strings"
	"testing"
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
