package logline

import (
	"errors"
	"strings"
	"testing"
)

// The lines nsguard wrote before this package existed: what is in the logs already.
const (
	apexLine   = `[WARNING] plugin/nsguard: answer through namespace "my-app": client=10.244.1.5 pod=new-namespace-1/web question="my-app.svc.cluster.local. A" typed="my-app" answer=nodata records="" action=logged fix="no Service my-app in new-namespace-1; use my-app.new-namespace-2"`
	shadowLine = `[WARNING] plugin/nsguard: endpoint shadows a Service "primary.db": client=10.244.1.5 pod=new-namespace-1/web question="primary.db.new-namespace-1.svc.cluster.local. A" typed="primary.db" got="endpoint primary of Service db in namespace new-namespace-1" meant="Service primary in namespace db" records="primary.db.new-namespace-1.svc.cluster.local. 5 IN A 10.244.1.20" action=logged fix="ask for primary.db.svc.cluster.local (or primary.db.svc), ..."`
)

var (
	apexEntry = Entry{Kind: Apex, Subject: "my-app", Client: "10.244.1.5", Pod: "new-namespace-1/web",
		Question: "my-app.svc.cluster.local. A", Typed: "my-app", Answer: "nodata", Action: "logged",
		Fix: "no Service my-app in new-namespace-1; use my-app.new-namespace-2"}
	shadowEntry = Entry{Kind: Shadow, Subject: "primary.db", Client: "10.244.1.5", Pod: "new-namespace-1/web",
		Question: "primary.db.new-namespace-1.svc.cluster.local. A", Typed: "primary.db",
		Got: "endpoint primary of Service db in namespace new-namespace-1", Meant: "Service primary in namespace db",
		Records: "primary.db.new-namespace-1.svc.cluster.local. 5 IN A 10.244.1.20", Action: "logged",
		Fix: "ask for primary.db.svc.cluster.local (or primary.db.svc), ..."}
)

// TestWriteIsWhatWasWritten: the lines already in the logs are the ones written now.
func TestWriteIsWhatWasWritten(t *testing.T) {
	tests := []struct {
		name string
		e    Entry
		want string
	}{
		{"namespace", apexEntry, apexLine},
		{"endpoint shadow", shadowEntry, shadowLine},
		{"held", with(apexEntry, func(e *Entry) { e.Repeats, e.Suppressed = 3, 2 }), apexLine + " repeats=3 suppressed=2"},
		{"no pod", with(apexEntry, func(e *Entry) { e.Pod = "" }), strings.Replace(apexLine, " pod=new-namespace-1/web", "", 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Prefix + tt.e.String(); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func with(e Entry, f func(*Entry)) Entry { f(&e); return e }

// TestRoundTrip: whatever an entry holds, Parse reads back what Append wrote, on one line.
func TestRoundTrip(t *testing.T) {
	hostile := []string{
		`"`, `a"b`, `\`, `\"`, "a b", "  ", "a\nb", "\r\n", "x=y", "=", " x=\"y\"", `fix="evil"`,
		"\x00\x07\x1b[2J", "\xff\xfe", "ß", "名前", "😀", "a\u2028b", "\u202e", strings.Repeat("x", 70000),
		strings.Repeat(`" `, 1000), ":", `": client=1`, "\t",
	}
	for _, kind := range []Kind{Apex, Shadow} {
		base := apexEntry
		if kind == Shadow {
			base = shadowEntry
		}
		for i, v := range hostile {
			set := []func(*Entry){
				func(e *Entry) { e.Subject = v },
				func(e *Entry) { e.Client = v },
				func(e *Entry) { e.Pod = "ns/" + v },
				func(e *Entry) { e.Pod = v + "/name" },
				func(e *Entry) { e.Question = v },
				func(e *Entry) { e.Typed = v },
				func(e *Entry) { e.Records = v },
				func(e *Entry) { e.Action = v },
				func(e *Entry) { e.Fix = v },
				func(e *Entry) { e.Repeats, e.Suppressed = ^uint64(0), 1 },
			}
			if kind == Apex {
				set = append(set, func(e *Entry) { e.Answer = v })
			} else {
				set = append(set, func(e *Entry) { e.Got = v }, func(e *Entry) { e.Meant = v })
			}
			for j, f := range set {
				e := with(base, f)
				if e.Client == "" || e.Action == "" {
					continue
				}
				line := Prefix + e.String()
				if strings.ContainsAny(line, "\n\r") {
					t.Fatalf("kind %d value %d field %d: a line break in %q", kind, i, j, line)
				}
				got, err := Parse(line)
				if err != nil || got != e {
					t.Errorf("kind %d value %d field %d: %v\nwrote %+v\nread  %+v\nline  %q", kind, i, j, err, e, got, line)
				}
			}
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Entry // when err is nil
		err  error
	}{
		{"namespace", apexLine, apexEntry, nil},
		{"endpoint shadow", shadowLine, shadowEntry, nil},
		{"unknown key ignored", apexLine + " zone=cluster.local.", apexEntry, nil},
		{"quoted bare value", strings.Replace(apexLine, "answer=nodata", `answer="nodata"`, 1), apexEntry, nil},
		{"single quotes are a bare token", strings.Replace(apexLine, `typed="my-app"`, `typed='m'`, 1),
			with(apexEntry, func(e *Entry) { e.Typed = "'m'" }), nil},

		{"empty", "", Entry{}, ErrOther},
		{"no prefix", apexLine[len(Prefix):], Entry{}, ErrOther},
		{"other warning", Prefix + "cluster view not synced after 5s", Entry{}, ErrOther},
		{"info", "[INFO] plugin/nsguard: guarding cluster.local.", Entry{}, ErrOther},

		{"broken quote", strings.Replace(apexLine, `typed="my-app"`, `typed="my-app`, 1), Entry{}, ErrPair},
		{"broken subject", Prefix + `answer through namespace "my-app: client=10.244.1.5`, Entry{}, ErrSubject},
		{"no colon after subject", strings.Replace(apexLine, `"my-app": `, `"my-app" `, 1), Entry{}, ErrSubject},
		{"cut before fix", apexLine[:strings.Index(apexLine, " fix=")], Entry{}, ErrIncomplete},
		{"cut in repeats", apexLine + " repeats=", Entry{}, ErrPair},
		{"bad repeats", apexLine + " repeats=many", Entry{}, ErrValue},
		{"negative suppressed", apexLine + " suppressed=-1", Entry{}, ErrValue},
		{"shadow without meant", strings.Replace(shadowLine, ` meant="Service primary in namespace db"`, "", 1), Entry{}, ErrIncomplete},
		{"namespace without answer", strings.Replace(apexLine, " answer=nodata", "", 1), Entry{}, ErrIncomplete},
		{"pod without namespace", strings.Replace(apexLine, "pod=new-namespace-1/web", "pod=web", 1), Entry{}, ErrValue},
		{"repeated key", apexLine + ` fix="again"`, Entry{}, ErrRepeated},
		{"two spaces", strings.Replace(apexLine, " typed=", "  typed=", 1), Entry{}, ErrPair},
		{"text after a quote", strings.Replace(apexLine, `typed="my-app"`, `typed="my-app"x`, 1), Entry{}, ErrPair},
		{"no key", apexLine + " =x", Entry{}, ErrPair},
		{"upper-case key", apexLine + " Zone=x", Entry{}, ErrPair},
		{"not key=value", apexLine + " trailing", Entry{}, ErrPair},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.line)
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = apexEntry.Append(buf[:0])
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(apexLine); err != nil {
			b.Fatal(err)
		}
	}
}
