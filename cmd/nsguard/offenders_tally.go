package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// The aggregation: one row per client and typed name.

// The bounds that keep offenders' memory independent of its input; help and the report say
// what is past them.
const (
	// maxLogLine bounds a line read whole, newline included; longer lines cannot be
	// nsguard's (its longest, five long records and a fix naming three namespaces, are
	// under 48 KiB) and are skipped.
	maxLogLine = 64 << 10
	// maxRows bounds the rows; lines for a row first seen past it are counted in the
	// summary, not ranked. A row holds what one of its lines says, so this is also the
	// memory bound: at most maxRows lines.
	maxRows = 10_000
	// maxValues bounds the answer and action kinds a row lists, and maxValueLen their
	// length: nsguard writes two answers and three actions, all short. Lines with others
	// are counted in the row.
	maxValues   = 8
	maxValueLen = 32
)

// offenderKey is what makes a row: who asked (the pod, or the client address without one)
// and what they typed.
type offenderKey struct{ who, kind, typed string }

// tally is what the lines read so far add up to.
type tally struct {
	rows    map[offenderKey]*offender
	summary offendersSummary
}

func newTally() *tally { return &tally{rows: map[offenderKey]*offender{}} }

// readFile reads one log, "-" being stdin; errors name it.
func (t *tally) readFile(name string, stdin io.Reader) error {
	if name == "-" {
		return t.read("<stdin>", stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return err // it names the file
	}
	defer f.Close()
	return t.read(name, f)
}

func (t *tally) read(name string, r io.Reader) error {
	var split lineSplitter
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLogLine)
	sc.Split(split.split)
	for sc.Scan() {
		t.add(sc.Text())
	}
	t.summary.Skipped += split.long
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// add counts one line.
func (t *tally) add(line string) {
	e, class := parseLine(line)
	switch class {
	case brokenLine:
		t.summary.Broken++
		fallthrough
	case otherLine:
		t.summary.Skipped++
		return
	}
	t.summary.Lines++
	t.summary.HeldBack = addSat(t.summary.HeldBack, e.Suppressed)
	who := e.Pod
	if who == "" {
		who = e.Client
	}
	k := offenderKey{who, e.kind, e.Typed}
	o := t.rows[k]
	if o == nil {
		if len(t.rows) >= maxRows {
			t.summary.UnrankedLines++
			t.summary.UnrankedAnswers = addSat(t.summary.UnrankedAnswers, addSat(1, e.Repeats))
			return
		}
		// The key outlives the line it came from: a copy keeps only the key.
		k = offenderKey{strings.Clone(who), e.kind, strings.Clone(e.Typed)}
		o = &offender{Pod: strings.Clone(e.Pod), Typed: k.typed, Kind: e.kind, Answers: []string{}, Actions: []string{}}
		o.Namespace = namespaceOf(o.Pod)
		t.rows[k] = o
	}
	o.add(e)
}

// lineSplitter is bufio.ScanLines that skips lines longer than maxLogLine instead of
// failing: a log may hold anything.
type lineSplitter struct {
	inLong bool // inside a line too long to hold
	long   int  // lines skipped for their length
}

func (l *lineSplitter) split(data []byte, atEOF bool) (int, []byte, error) {
	i := bytes.IndexByte(data, '\n')
	switch {
	case l.inLong && (i >= 0 || atEOF):
		l.inLong = false
		l.long++
		if i < 0 {
			return len(data), nil, nil
		}
		return i + 1, nil, nil
	case l.inLong:
		return len(data), nil, nil
	case i >= 0:
		return i + 1, bytes.TrimSuffix(data[:i], []byte("\r")), nil
	case len(data) >= maxLogLine:
		l.inLong = true
		return len(data), nil, nil
	case atEOF && len(data) > 0:
		return len(data), bytes.TrimSuffix(data, []byte("\r")), nil
	}
	return 0, nil, nil
}

func namespaceOf(pod string) string {
	ns, _, _ := strings.Cut(pod, "/")
	return ns
}

// addSat adds without wrapping: counts come from logs, which may say anything.
func addSat(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// offender is one row: a client that typed a name and got it answered through a namespace
// or an endpoint.
type offender struct {
	Pod          string    `json:"pod"`
	Client       string    `json:"client"`
	Namespace    string    `json:"namespace"`
	Typed        string    `json:"typed"`
	Kind         string    `json:"kind"`
	Through      string    `json:"through,omitempty"`
	Got          string    `json:"got,omitempty"`
	Meant        string    `json:"meant,omitempty"`
	Answers      []string  `json:"answers"`
	OtherAnswers uint64    `json:"otherAnswers,omitempty"`
	Records      string    `json:"records"`
	Count        uint64    `json:"count"`
	FirstSeen    time.Time `json:"firstSeen,omitzero"`
	LastSeen     time.Time `json:"lastSeen,omitzero"`
	Actions      []string  `json:"actions"`
	OtherActions uint64    `json:"otherActions,omitempty"`
	Fix          string    `json:"fix"`
	said         bool      // Client, Records, Fix and the rest are set, from one line
}

// add counts a line of this row. What a row says (client, records, fix) comes from one
// line, cloned so that the row keeps neither that line nor any other: its latest line with
// records (an AAAA question's NODATA says less than the A records), or its latest line
// while none has records; latest by timestamp, or in the order read when lines have none.
func (o *offender) add(e answerEntry) {
	o.Count = addSat(o.Count, addSat(1, e.Repeats))
	if !e.at.IsZero() && (o.FirstSeen.IsZero() || e.at.Before(o.FirstSeen)) {
		o.FirstSeen = e.at
	}
	latest := e.at.IsZero() || !e.at.Before(o.LastSeen)
	if latest && !e.at.IsZero() {
		o.LastSeen = e.at
	}
	answer := e.Answer
	if answer == "" { // endpoint shadow lines have no answer=
		answer = "nodata"
		if e.Records != "" {
			answer = "records"
		}
	}
	if !addValue(&o.Answers, answer) {
		o.OtherAnswers++
	}
	if !addValue(&o.Actions, e.Action) {
		o.OtherActions++
	}
	if o.said && (e.Records == "") != (o.Records == "") {
		latest = e.Records != "" // a line with records says more, whenever it came
	}
	if !latest && o.said {
		return
	}
	o.said = true
	o.Client, o.Fix, o.Records = strings.Clone(e.Client), strings.Clone(e.Fix), strings.Clone(e.Records)
	if e.kind == kindNamespace {
		o.Through = strings.Clone(e.Subject)
	}
	o.Got, o.Meant = strings.Clone(e.Got), strings.Clone(e.Meant)
}

// addValue adds v to a set of at most maxValues short values, sorted when the report is
// made; it says whether v is in the set.
func addValue(set *[]string, v string) bool {
	if slices.Contains(*set, v) {
		return true
	}
	if len(*set) >= maxValues || len(v) > maxValueLen {
		return false
	}
	*set = append(*set, strings.Clone(v)) // not the whole line it came from
	return true
}
