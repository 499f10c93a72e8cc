package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The report.

// offendersReport is what 'nsguard offenders -o json' prints (version 1):
//
//	{
//	  "version": 1,
//	  "rows": [{
//	    "pod": "new-namespace-1/web",   // "" when nsguard did not know the client's pod
//	    "client": "10.244.1.5",         // client= of the row's line ("unknown" when nsguard had none)
//	    "namespace": "new-namespace-1", // the pod's namespace; "" when unknown
//	    "typed": "my-app",              // what the client most likely typed
//	    "kind": "namespace",            // or "endpoint shadow"
//	    "through": "my-app",            // kind namespace only: the namespace that answered
//	    "got": "...", "meant": "...",   // kind endpoint shadow only: what answered, what was meant
//	    "answers": ["nodata"],          // answer kinds seen: nodata, records
//	    "otherAnswers": 3,              // lines whose answer kind is past the 8 listed (omitted when 0)
//	    "records": "",                  // records= of the row's line
//	    "count": 4,                     // answers: each line is 1 + its repeats=
//	    "firstSeen": "2026-12-02T21:34:35.123456789Z",
//	    "lastSeen": "2026-12-02T21:40:02Z", // RFC 3339; both absent without timestamps
//	    "actions": ["logged"],          // actions seen: logged, refused
//	    "otherActions": 3,              // lines whose action is past the 8 listed (omitted when 0)
//	    "fix": "..."                    // fix= of the row's line
//	  }],
//	  "summary": {
//	    "rows": 1, "answers": 4,        // rows, and the sum of their counts
//	    "lines": 2,                     // nsguard answer lines read
//	    "heldBack": 7,                  // the sum of suppressed=: not attributed to a row
//	    "skipped": 10,                  // other lines, broken ones included
//	    "broken": 1,                    // lines that start like an answer line but do not parse
//	    "unrankedLines": 5,             // lines for rows past the first 10,000: counted, not
//	    "unrankedAnswers": 9            // ranked, and in no row (both omitted when 0)
//	  }
//	}
//
// Rows come most answers first, then by namespace, pod (or client) and typed name. The
// row's line, whose client, records, through, got, meant and fix the row shows, is its
// latest line with records, or its latest line while none has records: latest by
// timestamp, or read last when lines have none; Go's log dates carry no zone and are read
// as UTC. Each answer nsguard
// held back is in one count: a client and question logged before keeps it in repeats=, and
// a row's count adds those up; the rest, held back by log_limit, are in heldBack.
type offendersReport struct {
	Version int              `json:"version"`
	Rows    []*offender      `json:"rows"`
	Summary offendersSummary `json:"summary"`
}

type offendersSummary struct {
	Rows            int    `json:"rows"`
	Answers         uint64 `json:"answers"`
	Lines           int    `json:"lines"`
	HeldBack        uint64 `json:"heldBack"`
	Skipped         int    `json:"skipped"`
	Broken          int    `json:"broken"`
	UnrankedLines   int    `json:"unrankedLines,omitempty"`
	UnrankedAnswers uint64 `json:"unrankedAnswers,omitempty"`
}

func (t *tally) report() offendersReport {
	r := offendersReport{Version: 1, Rows: []*offender{}, Summary: t.summary}
	for _, o := range t.rows {
		slices.Sort(o.Answers)
		slices.Sort(o.Actions)
		r.Rows = append(r.Rows, o)
		r.Summary.Answers = addSat(r.Summary.Answers, o.Count)
	}
	slices.SortFunc(r.Rows, func(a, b *offender) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.who(), b.who()), cmp.Compare(a.Typed, b.Typed), cmp.Compare(a.Kind, b.Kind))
	})
	r.Summary.Rows = len(r.Rows)
	return r
}

// who is the pod, or the client address when the lines had no pod.
func (o *offender) who() string {
	if o.Pod != "" {
		return o.Pod
	}
	return o.Client
}

// answered says what answered: "namespace my-app: nodata" or "endpoint shadow: records".
func (o *offender) answered() string {
	kind := o.Kind
	if o.Kind == kindNamespace {
		kind += " " + o.Through
	}
	return kind + ": " + values(o.Answers, o.OtherAnswers)
}

// values lists the kinds a row saw, and counts the lines with kinds past the bound.
func values(set []string, other uint64) string {
	s := strings.Join(set, ", ")
	if other > 0 {
		s += fmt.Sprintf(" (+%d lines with others)", other)
	}
	return s
}

// writeOffendersJSON writes what json.Encoder with a two-space indent writes for r, a row
// at a time: the output is as large as the rows' text, and is not held whole as well.
func writeOffendersJSON(w io.Writer, r offendersReport) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "{\n  \"version\": %d,\n  \"rows\": [", r.Version)
	for i, o := range r.Rows {
		row, err := json.MarshalIndent(o, "    ", "  ")
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    ")
		b.Write(row)
	}
	if len(r.Rows) > 0 {
		b.WriteString("\n  ")
	}
	summary, err := json.MarshalIndent(r.Summary, "  ", "  ")
	if err != nil {
		return err
	}
	b.WriteString("],\n  \"summary\": ")
	b.Write(summary)
	b.WriteString("\n}\n")
	return b.Flush()
}

// writeOffendersTable writes a row at a time, as writeOffendersJSON does.
func writeOffendersTable(w io.Writer, r offendersReport) error {
	b := bufio.NewWriter(w)
	if len(r.Rows) == 0 {
		b.WriteString("no answers through a namespace or an endpoint\n")
	} else {
		cells := [][]string{{"POD", "NAMESPACE", "TYPED", "ANSWERED", "COUNT", "FIRST SEEN", "LAST SEEN", "ACTION"}}
		for _, o := range r.Rows {
			cells = append(cells, []string{o.who(), orDash(o.Namespace), o.Typed, o.answered(),
				strconv.FormatUint(o.Count, 10), seen(o.FirstSeen), seen(o.LastSeen), values(o.Actions, o.OtherActions)})
		}
		widths := make([]int, len(cells[0]))
		for _, row := range cells {
			for i, c := range row {
				row[i] = printable(c)
				widths[i] = max(widths[i], utf8.RuneCountInString(row[i]))
			}
		}
		for i, row := range cells {
			for j, c := range row {
				pad := strings.Repeat(" ", widths[j]-utf8.RuneCountInString(c))
				switch {
				case j == 4 && i > 0: // counts align right
					b.WriteString(pad + c)
				case j == len(row)-1:
					b.WriteString(c)
				default:
					b.WriteString(c + pad)
				}
				if j < len(row)-1 {
					b.WriteString("  ")
				}
			}
			b.WriteByte('\n')
			if i == 0 {
				continue
			}
			if o := r.Rows[i-1]; o.Records != "" {
				b.WriteString("    records: " + printable(o.Records) + "\n")
			}
			b.WriteString("    fix:     " + printable(r.Rows[i-1].Fix) + "\n")
		}
	}
	s := r.Summary
	fmt.Fprintf(b, "\n%d rows, %d answers from %d lines; %d held back (suppressed=), not attributed to a row; %d lines skipped, %d of them broken\n",
		s.Rows, s.Answers, s.Lines, s.HeldBack, s.Skipped, s.Broken)
	if s.UnrankedLines > 0 {
		fmt.Fprintf(b, "%d more lines (%d answers) for rows past the first %d, not ranked\n", s.UnrankedLines, s.UnrankedAnswers, maxRows)
	}
	return b.Flush()
}

// writeOffendersGitHub prints one warning annotation per row; logs have no file to point at.
func writeOffendersGitHub(w io.Writer, r offendersReport) error {
	for _, o := range r.Rows {
		// A client chose the typed name and what follows from it: no raw escapes in the log.
		typed, who := printable(o.Typed), printable(o.who())
		title := "nsguard " + typed + " from " + who
		msg := who
		if o.Namespace != "" {
			msg += " in namespace " + printable(o.Namespace)
		}
		msg += fmt.Sprintf(" typed %s: %d answers", typed, o.Count)
		if !o.FirstSeen.IsZero() {
			msg += " from " + seen(o.FirstSeen) + " to " + seen(o.LastSeen)
		}
		msg += "; answered by " + printable(o.answered()) + "; action " + printable(values(o.Actions, o.OtherActions))
		if o.Records != "" {
			msg += "\nrecords: " + printable(o.Records)
		}
		msg += "\nfix: " + printable(o.Fix)
		if _, err := fmt.Fprintf(w, "::warning title=%s::%s\n", escapeProperty(title), escapeData(msg)); err != nil {
			return err
		}
	}
	return nil
}

func seen(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printable keeps what a client chose from driving the terminal: a value with a control
// or other unprintable character is shown Go quoted, as nsguard logged it.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}
