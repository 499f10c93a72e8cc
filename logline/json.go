package logline

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
)

// Under CoreDNS's -log-format json, nsguard writes each line as one JSON record: msg is the
// subject and its quoted name, and every key=value pair of the text line is an attribute of
// the same name, repeats and suppressed as numbers.

// Msg is the line's subject and quoted name: the msg of its JSON record.
func (e *Entry) Msg() string {
	s := ApexSubject
	if e.Kind == Shadow {
		s = ShadowSubject
	}
	return s + " " + strconv.Quote(e.Subject)
}

// Attrs are the line's pairs as typed attributes, in the order Append writes them.
func (e *Entry) Attrs() []slog.Attr {
	a := make([]slog.Attr, 0, 12)
	a = append(a, slog.String(KeyClient, e.Client))
	if e.Pod != "" {
		a = append(a, slog.String(KeyPod, e.Pod))
	}
	a = append(a, slog.String(KeyQuestion, e.Question), slog.String(KeyTyped, e.Typed))
	if e.Kind == Shadow {
		a = append(a, slog.String(KeyGot, e.Got), slog.String(KeyMeant, e.Meant))
	} else {
		a = append(a, slog.String(KeyAnswer, e.Answer))
	}
	a = append(a, slog.String(KeyRecords, e.Records), slog.String(KeyAction, e.Action), slog.String(KeyFix, e.Fix))
	return appendHeldAttrs(a, e.Repeats, e.Suppressed)
}

func appendHeldAttrs(a []slog.Attr, repeats, suppressed uint64) []slog.Attr {
	if repeats > 0 {
		a = append(a, slog.Uint64(KeyRepeats, repeats))
	}
	if suppressed > 0 {
		a = append(a, slog.Uint64(KeySuppressed, suppressed))
	}
	return a
}

// Msg is the finding line's subject and quoted name: the msg of its JSON record.
func (f *Finding) Msg() string {
	s := FindingSubject
	if f.Gone {
		s = FindingGoneSubject
	}
	return s + " " + strconv.Quote(f.Subject)
}

// Attrs are the finding line's pairs as typed attributes, in the order Append writes them.
func (f *Finding) Attrs() []slog.Attr {
	a := make([]slog.Attr, 0, 7)
	a = append(a, slog.String(KeyCheck, f.Check), slog.String(KeySeverity, f.Severity))
	if f.Name != "" {
		a = append(a, slog.String(KeyName, f.Name))
	}
	a = append(a, slog.String(KeyMessage, f.Message))
	if !f.Gone {
		a = append(a, slog.String(KeyFix, f.Fix))
	}
	return appendHeldAttrs(a, f.Repeats, f.Suppressed)
}

// record is what ParseJSON reads of a record; a nil field is a key the record lacks.
type record struct {
	Plugin     string  `json:"plugin"`
	Msg        *string `json:"msg"`
	Client     *string `json:"client"`
	Pod        *string `json:"pod"`
	Question   *string `json:"question"`
	Typed      *string `json:"typed"`
	Answer     *string `json:"answer"`
	Records    *string `json:"records"`
	Got        *string `json:"got"`
	Meant      *string `json:"meant"`
	Action     *string `json:"action"`
	Fix        *string `json:"fix"`
	Repeats    *uint64 `json:"repeats"`
	Suppressed *uint64 `json:"suppressed"`
}

// ParseJSON reads a JSON record, as CoreDNS writes one per line under -log-format json. It
// returns ErrOther for any record but an nsguard answer line, and one of the other errors for
// one that starts like an answer line but does not parse.
func ParseJSON(line string) (Entry, error) {
	// A quick look first: nearly every record of a busy log is CoreDNS's own.
	if !strings.Contains(line, `"plugin":"nsguard"`) ||
		!strings.Contains(line, `"msg":"`+ApexSubject+` `) && !strings.Contains(line, `"msg":"`+ShadowSubject+` `) {
		return Entry{}, ErrOther
	}
	var r record
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return Entry{}, ErrValue
	}
	if r.Plugin != "nsguard" || r.Msg == nil {
		return Entry{}, ErrOther
	}
	var e Entry
	need := needApex
	rest, ok := strings.CutPrefix(*r.Msg, ApexSubject+" ")
	switch {
	case ok:
		e.Kind = Apex
	default:
		if rest, ok = strings.CutPrefix(*r.Msg, ShadowSubject+" "); !ok {
			return e, ErrOther
		}
		e.Kind, need = Shadow, needShadow
	}
	subject, rest, ok := cutQuoted(rest)
	if !ok || rest != "" {
		return e, ErrSubject
	}
	e.Subject = subject
	have := 0
	for _, f := range []struct {
		key string
		v   *string
	}{
		{KeyClient, r.Client}, {KeyPod, r.Pod}, {KeyQuestion, r.Question}, {KeyTyped, r.Typed},
		{KeyAnswer, r.Answer}, {KeyRecords, r.Records}, {KeyGot, r.Got}, {KeyMeant, r.Meant},
		{KeyAction, r.Action}, {KeyFix, r.Fix},
	} {
		if f.v == nil {
			continue
		}
		bit := e.set(f.key, *f.v)
		if bit < 0 {
			return e, ErrValue
		}
		have |= bit
	}
	if r.Repeats != nil {
		e.Repeats, have = *r.Repeats, have|bitRepeats
	}
	if r.Suppressed != nil {
		e.Suppressed, have = *r.Suppressed, have|bitSuppressed
	}
	if have&need != need {
		return e, ErrIncomplete
	}
	return e, nil
}
