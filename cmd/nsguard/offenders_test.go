package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nsguard/nsguard/logline"
)

const (
	kubectlLog   = "testdata/coredns-kubectl.log" // kubectl logs -l k8s-app=kube-dns --prefix --timestamps
	nodeLocalLog = "testdata/nodelocal-plain.log" // kubectl logs of one node-local cache, no timestamps
	apexLine     = `[WARNING] plugin/nsguard: answer through namespace "my-app": client=10.244.1.5 pod=new-namespace-1/web question="my-app.svc.cluster.local. A" typed="my-app" answer=nodata records="" action=logged fix="no Service my-app in new-namespace-1; use my-app.new-namespace-2"`
	// The same lines as CoreDNS -log-format json writes them.
	apexRecord   = `{"time":"2026-12-02T21:34:35.123456789Z","level":"WARN","msg":"answer through namespace \"my-app\"","plugin":"nsguard","client":"10.244.1.5","pod":"new-namespace-1/web","question":"my-app.svc.cluster.local. A","typed":"my-app","answer":"nodata","records":"","action":"logged","fix":"no Service my-app in new-namespace-1; use my-app.new-namespace-2"}`
	shadowRecord = `{"time":"2026-12-02T21:34:36Z","level":"WARN","msg":"endpoint shadows a Service \"primary.db\"","plugin":"nsguard","client":"10.244.1.5","pod":"new-namespace-1/web","question":"primary.db.new-namespace-1.svc.cluster.local. A","typed":"primary.db","got":"endpoint primary of Service db in namespace new-namespace-1","meant":"Service primary in namespace db","records":"primary.db.new-namespace-1.svc.cluster.local. 5 IN A 10.244.1.20","action":"logged","fix":"ask for primary.db.svc.cluster.local (or primary.db.svc), ..."}`
	shadowLine   = `[WARNING] plugin/nsguard: endpoint shadows a Service "primary.db": client=10.244.1.5 pod=new-namespace-1/web question="primary.db.new-namespace-1.svc.cluster.local. A" typed="primary.db" got="endpoint primary of Service db in namespace new-namespace-1" meant="Service primary in namespace db" records="primary.db.new-namespace-1.svc.cluster.local. 5 IN A 10.244.1.20" action=logged fix="ask for primary.db.svc.cluster.local (or primary.db.svc), ..."`
)

// TestParseLine covers what offenders adds to package logline: the prefixes of kubectl and
// Go's log, and what a line is to the tally. logline's tests cover the line itself.
func TestParseLine(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	apex := logline.Entry{Kind: logline.Apex, Subject: "my-app", Client: "10.244.1.5",
		Pod: "new-namespace-1/web", Question: "my-app.svc.cluster.local. A", Typed: "my-app", Answer: "nodata",
		Action: "logged", Fix: "no Service my-app in new-namespace-1; use my-app.new-namespace-2"}
	tests := []struct {
		name  string
		line  string
		class lineClass
		want  answerEntry // compared when class is answerLine
	}{
		{"namespace", apexLine, answerLine, answerEntry{Entry: apex, kind: kindNamespace}},
		{"endpoint shadow", shadowLine, answerLine, answerEntry{kind: kindShadow, Entry: logline.Entry{Kind: logline.Shadow,
			Subject: "primary.db", Client: "10.244.1.5", Pod: "new-namespace-1/web",
			Question: "primary.db.new-namespace-1.svc.cluster.local. A", Typed: "primary.db",
			Records: "primary.db.new-namespace-1.svc.cluster.local. 5 IN A 10.244.1.20", Meant: "Service primary in namespace db",
			Got: "endpoint primary of Service db in namespace new-namespace-1", Action: "logged",
			Fix: "ask for primary.db.svc.cluster.local (or primary.db.svc), ..."}}},
		{"kubectl prefix and timestamp", "[pod/coredns-5d78c9869d-x2x4k/coredns] 2026-12-02T21:34:35.123456789Z " + apexLine, answerLine,
			answerEntry{Entry: apex, kind: kindNamespace, at: at("2026-12-02T21:34:35.123456789Z")}},
		{"kubectl timestamp", "2026-12-02T21:34:35Z " + apexLine, answerLine, answerEntry{Entry: apex, kind: kindNamespace, at: at("2026-12-02T21:34:35Z")}},
		{"kubectl prefix", "[pod/coredns-5d78c9869d-x2x4k/coredns] " + apexLine, answerLine, answerEntry{Entry: apex, kind: kindNamespace}},
		{"Go log date", "2026/12/02 21:34:35 " + apexLine, answerLine, answerEntry{Entry: apex, kind: kindNamespace, at: at("2026-12-02T21:34:35Z")}},
		{"Go log date with microseconds", "2026/12/02 21:34:35.000123 " + apexLine, answerLine,
			answerEntry{Entry: apex, kind: kindNamespace, at: at("2026-12-02T21:34:35.000123Z")}},
		{"kubectl timestamp before Go log date", "2026-12-02T21:34:35.5Z 2026/12/02 21:34:35 " + apexLine, answerLine,
			answerEntry{Entry: apex, kind: kindNamespace, at: at("2026-12-02T21:34:35.5Z")}},

		{"json namespace", apexRecord, answerLine, answerEntry{Entry: apex, kind: kindNamespace, at: at("2026-12-02T21:34:35.123456789Z")}},
		{"json endpoint shadow", shadowRecord, answerLine, answerEntry{kind: kindShadow, at: at("2026-12-02T21:34:36Z"), Entry: logline.Entry{Kind: logline.Shadow,
			Subject: "primary.db", Client: "10.244.1.5", Pod: "new-namespace-1/web",
			Question: "primary.db.new-namespace-1.svc.cluster.local. A", Typed: "primary.db",
			Records: "primary.db.new-namespace-1.svc.cluster.local. 5 IN A 10.244.1.20", Meant: "Service primary in namespace db",
			Got: "endpoint primary of Service db in namespace new-namespace-1", Action: "logged",
			Fix: "ask for primary.db.svc.cluster.local (or primary.db.svc), ..."}}},
		{"json kubectl prefix and timestamp", "[pod/coredns-5d78c9869d-x2x4k/coredns] 2026-12-02T21:40:00Z " + apexRecord, answerLine,
			answerEntry{Entry: apex, kind: kindNamespace, at: at("2026-12-02T21:40:00Z")}},
		{"json kubectl prefix", "[pod/coredns-5d78c9869d-x2x4k/coredns] " + apexRecord, answerLine,
			answerEntry{Entry: apex, kind: kindNamespace, at: at("2026-12-02T21:34:35.123456789Z")}},
		{"json kubectl timestamp", "2026-12-02T21:40:00Z " + apexRecord, answerLine,
			answerEntry{Entry: apex, kind: kindNamespace, at: at("2026-12-02T21:40:00Z")}},
		{"json held", strings.Replace(apexRecord, `}`, `,"repeats":3,"suppressed":2}`, 1), answerLine,
			answerEntry{Entry: with(apex, func(e *logline.Entry) { e.Repeats, e.Suppressed = 3, 2 }), kind: kindNamespace, at: at("2026-12-02T21:34:35.123456789Z")}},
		{"json unknown key", strings.Replace(apexRecord, `}`, `,"zone":"cluster.local."}`, 1), answerLine,
			answerEntry{Entry: apex, kind: kindNamespace, at: at("2026-12-02T21:34:35.123456789Z")}},

		{"json other plugin", `{"time":"2026-12-02T21:34:35Z","level":"INFO","msg":"10.244.1.5:43101 - 27719 \"A IN my-app.svc.cluster.local. udp 53 false 512\" NOERROR","plugin":"log"}`, otherLine, answerEntry{}},
		{"json nsguard warning", `{"time":"2026-12-02T21:34:35Z","level":"WARN","msg":"cluster view not synced; serving with core checks only until it is","plugin":"nsguard","after":"5s"}`, otherLine, answerEntry{}},
		{"json finding", `{"time":"2026-12-02T21:34:35Z","level":"WARN","msg":"cluster finding \"Namespace my-app\"","plugin":"nsguard","check":"namespace-capture","severity":"warning","message":"m","fix":"f"}`, otherLine, answerEntry{}},
		{"json answer line of another plugin", strings.Replace(apexRecord, `"plugin":"nsguard"`, `"plugin":"other"`, 1), otherLine, answerEntry{}},

		{"json cut short", apexRecord[:len(apexRecord)-30], brokenLine, answerEntry{}},
		{"json repeats not a number", strings.Replace(apexRecord, `}`, `,"repeats":"many"}`, 1), brokenLine, answerEntry{}},
		{"json fix missing", strings.Replace(apexRecord, `,"fix":"no Service my-app in new-namespace-1; use my-app.new-namespace-2"`, ``, 1), brokenLine, answerEntry{}},
		{"json pod malformed", strings.Replace(apexRecord, `"pod":"new-namespace-1/web"`, `"pod":"web"`, 1), brokenLine, answerEntry{}},
		{"json subject unquoted", strings.Replace(apexRecord, `namespace \"my-app\"`, `namespace my-app`, 1), brokenLine, answerEntry{}},
		{"json typed a number", strings.Replace(apexRecord, `"typed":"my-app"`, `"typed":7`, 1), brokenLine, answerEntry{}},

		{"empty", "", otherLine, answerEntry{}},
		{"garbage", "\x00\xff}{ ===", otherLine, answerEntry{}},
		{"start-up", "CoreDNS-1.11.3", otherLine, answerEntry{}},
		{"nsguard info", "[INFO] plugin/nsguard: guarding cluster.local. in mode log, with a cluster view", otherLine, answerEntry{}},
		{"nsguard other warning", "[WARNING] plugin/nsguard: cluster view not synced after 5s; serving with core checks only until it is", otherLine, answerEntry{}},
		{"other plugin", `[INFO] 10.244.1.5:43101 - 27719 "A IN my-app.svc.cluster.local. udp 53 false 512" NOERROR qr,aa,rd 146 0.000208911s`, otherLine, answerEntry{}},
		{"level not first", "x " + apexLine, otherLine, answerEntry{}},

		{"broken quote", strings.Replace(apexLine, `typed="my-app"`, `typed="my-app`, 1), brokenLine, answerEntry{}},
		{"half-written", apexLine[:len(apexLine)-20], brokenLine, answerEntry{}},
		{"broken after a timestamp", "2026-12-02T21:34:35Z " + apexLine + " repeats=many", brokenLine, answerEntry{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, class := parseLine(tt.line)
			if class != tt.class {
				t.Fatalf("class %d, want %d", class, tt.class)
			}
			if class == answerLine && (got != tt.want || !got.at.Equal(tt.want.at)) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// offendersJSON runs offenders -o json and decodes what it printed.
func offendersJSON(t *testing.T, stdin string, args ...string) (int, offendersReport) {
	t.Helper()
	code, out, errs := runCLI(stdin, append([]string{"offenders", "-o", "json"}, args...)...)
	var r offendersReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("exit %d, %v; stderr %s\n%s", code, err, errs, out)
	}
	return code, r
}

func TestOffendersSample(t *testing.T) {
	type row struct {
		who, namespace, typed, kind string
		count                       uint64
		first, last                 string // RFC 3339, "" for none
		answers, actions            string
		records, fix                string // prefixes
	}
	const (
		refuseFix = "no Service my-app in new-namespace-1; Service my-app exists in new-namespace-2; use my-app.new-namespace-2, or create an ExternalName Service my-app in new-namespace-1 pointing at my-app.new-namespace-2.svc.cluster.local; if namespace my-app is meant to answer, add 'allow namespace my-app'"
		shadowRec = "primary.db.new-namespace-1.svc.cluster.local. 5 IN A 10.244.1.20"
	)
	web := row{"new-namespace-1/web", "new-namespace-1", "my-app", kindNamespace, 27,
		"2026-12-02T21:34:35.123456789Z", "2026-12-02T21:50:00.5Z", "nodata", "logged refused", "", refuseFix}
	shadow := row{"new-namespace-1/web", "new-namespace-1", "primary.db", kindShadow, 6,
		"2026-12-02T21:37:12Z", "2026-12-02T21:38:15Z", "records", "logged", shadowRec, "ask for primary.db.svc.cluster.local"}
	node := row{"10.0.0.12", "", "my-app", kindNamespace, 5,
		"2026-12-02T21:35:11Z", "2026-12-02T21:40:00Z", "nodata", "logged", "", "Service my-app exists in new-namespace-2"}
	unknown := row{"unknown", "", "monitoring", kindNamespace, 1,
		"2026-12-02T21:36:02.25Z", "2026-12-02T21:36:02.25Z", "nodata", "logged", "", "no Service monitoring exists"}
	// The node-local cache adds to the row of 10.0.0.12; its lines have no timestamp, so
	// they are the latest in the order read.
	nodeBoth := node
	nodeBoth.count, nodeBoth.answers, nodeBoth.records, nodeBoth.fix = 7, "nodata records",
		"my-app.svc.cluster.local. 30 IN CNAME other-app-1.legacy-a.svc.cluster.local.; ", "if my-app is a Service"
	payments := row{"10.244.2.31", "", "payments", kindNamespace, 12, "", "", "records", "logged",
		"payments.svc.cluster.local. 30 IN CNAME ledger.payments", "if payments is a Service"}

	tests := []struct {
		name    string
		stdin   string
		args    []string
		rows    []row
		summary offendersSummary
	}{
		{"kubectl log", "", []string{kubectlLog}, []row{web, shadow, node, unknown},
			offendersSummary{Rows: 4, Answers: 39, Lines: 10, HeldBack: 10, Skipped: 18, Broken: 1}},
		{"with -f", "", []string{"-f", kubectlLog}, []row{web, shadow, node, unknown},
			offendersSummary{Rows: 4, Answers: 39, Lines: 10, HeldBack: 10, Skipped: 18, Broken: 1}},
		{"two files", "", []string{kubectlLog, nodeLocalLog}, []row{web, payments, nodeBoth, shadow, unknown},
			offendersSummary{Rows: 5, Answers: 53, Lines: 13, HeldBack: 11, Skipped: 23, Broken: 1}},
		// -f is read before the arguments.
		{"-f, argument and stdin", mustRead(t, nodeLocalLog), []string{"-", "-f", kubectlLog}, []row{web, payments, nodeBoth, shadow, unknown},
			offendersSummary{Rows: 5, Answers: 53, Lines: 13, HeldBack: 11, Skipped: 23, Broken: 1}},
		{"stdin without arguments", mustRead(t, kubectlLog), nil, []row{web, shadow, node, unknown},
			offendersSummary{Rows: 4, Answers: 39, Lines: 10, HeldBack: 10, Skipped: 18, Broken: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, r := offendersJSON(t, tt.stdin, tt.args...)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if r.Summary != tt.summary {
				t.Errorf("summary %+v, want %+v", r.Summary, tt.summary)
			}
			if len(r.Rows) != len(tt.rows) {
				t.Fatalf("%d rows, want %d", len(r.Rows), len(tt.rows))
			}
			for i, w := range tt.rows {
				o := r.Rows[i]
				got := row{o.who(), o.Namespace, o.Typed, o.Kind, o.Count, stamp(o.FirstSeen), stamp(o.LastSeen),
					strings.Join(o.Answers, " "), strings.Join(o.Actions, " "), o.Records, o.Fix}
				if !strings.HasPrefix(got.records, w.records) || !strings.HasPrefix(got.fix, w.fix) || (w.records == "") != (got.records == "") {
					t.Errorf("row %d: records %q fix %q, want them to start %q and %q", i, got.records, got.fix, w.records, w.fix)
				}
				got.records, got.fix = w.records, w.fix
				if got != w {
					t.Errorf("row %d:\ngot  %+v\nwant %+v", i, got, w)
				}
			}
		})
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

func TestOffendersAggregation(t *testing.T) {
	line := func(stamp, pod, typed, action, fix, tail string) string {
		p := ""
		if pod != "" {
			p = " pod=" + pod
		}
		return stamp + `[WARNING] plugin/nsguard: answer through namespace "` + typed + `": client=10.244.1.5` + p +
			` question="` + typed + `.svc.cluster.local. A" typed="` + typed + `" answer=nodata records="" action=` + action +
			` fix="` + fix + `"` + tail + "\n"
	}
	tests := []struct {
		name  string
		log   string
		order []string // who/typed count
		fix   string   // of the first row
	}{
		{"repeats add up", line("", "a/web", "x", "logged", "f", " repeats=3") + line("", "a/web", "x", "logged", "f", " repeats=2 suppressed=9"),
			[]string{"a/web/x 7"}, "f"},
		{"suppressed never counts", line("", "a/web", "x", "logged", "f", " suppressed=100"), []string{"a/web/x 1"}, "f"},
		{"latest fix by timestamp", line("2026-12-02T10:00:00Z ", "a/web", "x", "logged", "new", "") + line("2026-12-02T09:00:00Z ", "a/web", "x", "refused", "old", ""),
			[]string{"a/web/x 2"}, "new"},
		{"latest fix in order read", line("", "a/web", "x", "logged", "old", "") + line("", "a/web", "x", "logged", "new", ""),
			[]string{"a/web/x 2"}, "new"},
		{"same address, pod and none", line("", "a/web", "x", "logged", "f", "") + line("", "", "x", "logged", "f", " repeats=1"),
			[]string{"10.244.1.5/x 2", "a/web/x 1"}, "f"},
		{"ties by namespace, pod, typed", line("", "b/api", "x", "logged", "f", "") + line("", "a/web", "y", "logged", "f", "") +
			line("", "a/web", "x", "logged", "f", "") + line("", "a/api", "z", "logged", "f", "") + line("", "", "w", "logged", "f", ""),
			[]string{"10.244.1.5/w 1", "a/api/z 1", "a/web/x 1", "a/web/y 1", "b/api/x 1"}, "f"},
		{"count first", line("", "b/api", "x", "logged", "f", " repeats=1") + line("", "a/web", "x", "logged", "f", ""),
			[]string{"b/api/x 2", "a/web/x 1"}, "f"},
		{"huge repeats do not wrap", line("", "a/web", "x", "logged", "f", " repeats=18446744073709551615") + line("", "a/web", "x", "logged", "f", ""),
			[]string{"a/web/x 18446744073709551615"}, "f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, r := offendersJSON(t, tt.log)
			var got []string
			for _, o := range r.Rows {
				got = append(got, o.who()+"/"+o.Typed+" "+itoa(o.Count))
			}
			if !slices.Equal(got, tt.order) || r.Rows[0].Fix != tt.fix {
				t.Errorf("rows %q, fix %q; want %q, %q", got, r.Rows[0].Fix, tt.order, tt.fix)
			}
		})
	}
}

// TestOffendersMixedStream: text and JSON lines of several pods, with and without kubectl's
// prefixes, in one stream, are counted together; what does not parse is counted as broken.
func TestOffendersMixedStream(t *testing.T) {
	log := strings.Join([]string{
		apexLine,
		apexRecord,
		"[pod/coredns-a/coredns] 2026-12-02T21:40:00Z " + strings.Replace(apexRecord, `}`, `,"repeats":4}`, 1),
		"[pod/coredns-b/coredns] " + apexLine + " repeats=2",
		"2026-12-02T21:41:00Z " + shadowRecord,
		shadowLine,
		`{"time":"2026-12-02T21:34:35Z","level":"INFO","msg":"CoreDNS-1.15.0","plugin":""}`,
		"[INFO] plugin/reload: Running configuration SHA512 = 1",
		apexRecord[:200],
		apexLine[:100],
	}, "\n")
	_, r := offendersJSON(t, log)
	var got []string
	for _, o := range r.Rows {
		got = append(got, o.who()+"/"+o.Typed+" "+itoa(o.Count))
	}
	want := []string{"new-namespace-1/web/my-app 10", "new-namespace-1/web/primary.db 2"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	if s := r.Summary; s.Lines != 6 || s.Broken != 2 || s.Skipped != 4 {
		t.Errorf("summary %+v: want 6 lines read, 4 skipped of which 2 broken", s)
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestOffendersLongLines(t *testing.T) {
	tests := []struct {
		name    string
		length  int
		newline bool
	}{
		{"just under the buffer", maxLogLine - 1, true},
		{"the buffer", maxLogLine, true},
		{"twice the buffer", 2*maxLogLine + 17, true},
		{"long last line", 3 * maxLogLine, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			long := strings.Repeat("x", tt.length)
			log := apexLine + "\n" + long + "\n" + apexLine + "\r\n" + long
			if tt.newline {
				log += "\n"
			}
			code, r := offendersJSON(t, log)
			if code != 1 || r.Summary.Lines != 2 || r.Summary.Skipped != 2 || len(r.Rows) != 1 || r.Rows[0].Count != 2 {
				t.Errorf("exit %d, %+v", code, r.Summary)
			}
		})
	}
}

func TestOffendersJSONShape(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		rows  int
	}{
		{"rows", apexLine + "\n" + shadowLine + "\n", 2},
		{"none", "CoreDNS-1.11.3\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, out, _ := runCLI(tt.stdin, "offenders", "--output=json")
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range doc {
					if !yield(k) {
						return
					}
				}
			})
			if !slices.Equal(keys, []string{"rows", "summary", "version"}) || string(doc["version"]) != "1" {
				t.Fatalf("top level %q, version %s", keys, doc["version"])
			}
			var rows []map[string]any
			if err := json.Unmarshal(doc["rows"], &rows); err != nil || rows == nil || len(rows) != tt.rows {
				t.Fatalf("rows %s: %v", doc["rows"], err)
			}
			var summary map[string]any
			if err := json.Unmarshal(doc["summary"], &summary); err != nil || len(summary) != 6 {
				t.Errorf("summary %s: %v", doc["summary"], err)
			}
			for _, row := range rows {
				for _, k := range []string{"pod", "client", "namespace", "typed", "kind", "answers", "records", "count", "actions", "fix"} {
					if _, ok := row[k]; !ok {
						t.Errorf("row lacks %q: %v", k, row)
					}
				}
				if _, ok := row["firstSeen"]; ok {
					t.Errorf("a row without timestamps has firstSeen: %v", row)
				}
				kind := row["kind"]
				if _, ok := row["through"]; ok != (kind == kindNamespace) {
					t.Errorf("through on kind %v: %v", kind, row)
				}
				if _, ok := row["meant"]; ok != (kind == kindShadow) {
					t.Errorf("meant on kind %v: %v", kind, row)
				}
			}
		})
	}
}

func TestOffendersTable(t *testing.T) {
	_, out, _ := runCLI("", "offenders", kubectlLog)
	lines := strings.Split(out, "\n")
	for i, want := range []string{
		"POD                  NAMESPACE        TYPED       ANSWERED                      COUNT  FIRST SEEN            LAST SEEN             ACTION",
		"new-namespace-1/web  new-namespace-1  my-app      namespace my-app: nodata         27  2026-12-02T21:34:35Z  2026-12-02T21:50:00Z  logged, refused",
		"    fix:     no Service my-app in new-namespace-1; ",
		"new-namespace-1/web  new-namespace-1  primary.db  endpoint shadow: records          6  2026-12-02T21:37:12Z  2026-12-02T21:38:15Z  logged",
		"    records: primary.db.new-namespace-1.svc.cluster.local. 5 IN A 10.244.1.20",
		"    fix:     ask for primary.db.svc.cluster.local",
		"10.0.0.12            -                my-app      namespace my-app: nodata          5  2026-12-02T21:35:11Z  2026-12-02T21:40:00Z  logged",
		"    fix:     Service my-app exists in new-namespace-2; ",
		"unknown              -                monitoring  namespace monitoring: nodata      1  2026-12-02T21:36:02Z  2026-12-02T21:36:02Z  logged",
	} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d does not start %q:\n%s", i, want, out)
		}
	}
	if !strings.Contains(out, "\n4 rows, 39 answers from 10 lines; 10 held back (suppressed=), not attributed to a row; 18 lines skipped, 1 of them broken\n") {
		t.Errorf("summary:\n%s", out)
	}
	_, out, _ = runCLI("", "offenders", nodeLocalLog)
	if !strings.Contains(out, "  12  -           -          logged\n") {
		t.Errorf("want - for times without timestamps:\n%s", out)
	}
	// A client's bytes must not reach the terminal raw.
	_, out, _ = runCLI(strings.Replace(apexLine, `typed="my-app"`, `typed="my\x1b[2J"`, 1), "offenders")
	if strings.Contains(out, "\x1b") || !strings.Contains(out, `"my\x1b[2J"`) {
		t.Errorf("control characters:\n%q", out)
	}
	_, out, _ = runCLI("", "offenders", "testdata/../main.go")
	if !strings.HasPrefix(out, "no answers through a namespace or an endpoint\n") {
		t.Errorf("no rows:\n%s", out)
	}
}

func TestOffendersGitHub(t *testing.T) {
	tests := []struct {
		name  string
		stdin string
		want  []string // substrings of the only line
	}{
		{"sample row", apexLine + " repeats=2", []string{
			"::warning title=nsguard my-app from new-namespace-1/web::new-namespace-1/web in namespace new-namespace-1 typed my-app: 3 answers; answered by namespace my-app: nodata; action logged%0Afix: no Service my-app",
		}},
		{"escaped", `[WARNING] plugin/nsguard: answer through namespace "a": client=10.0.0.1 question="a. A" typed="50%,b:c\r\nd" answer=records records="x::y" action=logged fix="f\n::error::"`, []string{
			// Quoted as the table shows it, then escaped: no raw control character reaches the log.
			`::warning title=nsguard "50%25%2Cb%3Ac\r\nd" from 10.0.0.1::10.0.0.1 typed "50%25,b:c\r\nd": 1 answers;`,
			`%0Arecords: x::y%0Afix: "f\n::error::"`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, _ := runCLI(tt.stdin, "offenders", "-o", "github")
			if code != 1 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "::warning title=") {
				t.Fatalf("exit %d, want one annotation:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("lacks %q:\n%s", w, out)
				}
			}
		})
	}
	_, out, _ := runCLI("", "offenders", "-o", "github", kubectlLog)
	if strings.Count(out, "::warning ") != 4 || strings.Count(out, "\n") != 4 ||
		!strings.Contains(out, " typed my-app: 27 answers from 2026-12-02T21:34:35Z to 2026-12-02T21:50:00Z; ") {
		t.Errorf("want one warning per row:\n%s", out)
	}
}

func TestOffendersExitStatus(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "coredns-missing.log")
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  int
		err   string // substring of stderr
	}{
		{"rows", "", []string{kubectlLog}, 1, ""},
		{"no rows", "[INFO] plugin/nsguard: guarding cluster.local. in mode log\n", nil, 0, ""},
		{"empty stdin", "", []string{"-"}, 0, ""},
		{"only broken lines", apexLine[:100] + "\n", nil, 0, ""},
		{"missing file", "", []string{kubectlLog, missing}, 2, missing},
		{"missing -f file", "", []string{"-f", missing}, 2, missing},
		{"directory", "", []string{dir}, 2, dir},
		{"bad output", "", []string{"-o", "yaml", kubectlLog}, 2, `--output "yaml"`},
		{"unknown flag", "", []string{"--since", "1h"}, 2, "since"},
		{"help", "", []string{"-h"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(tt.stdin, append([]string{"offenders"}, tt.args...)...)
			if code != tt.want || !strings.Contains(errs, tt.err) {
				t.Errorf("exit %d, want %d; stderr %q, want it to hold %q\nstdout:\n%s", code, tt.want, errs, tt.err, out)
			}
			if code == 2 && out != "" {
				t.Errorf("exit 2 printed a report:\n%s", out)
			}
		})
	}
}

// The JSON written a row at a time is what json.Encoder writes for the whole report.
func TestOffendersJSONAsEncoded(t *testing.T) {
	sample, err := os.ReadFile(kubectlLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, log := range []string{"", "x\n", string(sample), apexLine + "\n" + shadowLine + "\n"} {
		tl := newTally()
		if err := tl.read("log", strings.NewReader(log)); err != nil {
			t.Fatal(err)
		}
		r := tl.report()
		var got, want bytes.Buffer
		if err := writeOffendersJSON(&got, r); err != nil {
			t.Fatal(err)
		}
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("got\n%s\nwant\n%s", got.String(), want.String())
		}
	}
}
func with(e logline.Entry, f func(*logline.Entry)) logline.Entry { f(&e); return e }
