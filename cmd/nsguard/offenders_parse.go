package main

import (
	"strconv"
	"strings"
	"time"
)

// The line reading: prefixes, then nsguard's own key=value pairs.

// The kinds of answer line nsguard logs, as its lines begin and as rows name them.
const (
	nsguardWarning = "[WARNING] plugin/nsguard: "
	apexSubject    = "answer through namespace "
	shadowSubject  = "endpoint shadows a Service "

	kindNamespace = "namespace"
	kindShadow    = "endpoint shadow"
)

// goLogDate is the date Go's log package writes; it carries no zone.
const goLogDate = "2006/01/02 15:04:05"

// lineClass says what a log line is to offenders.
type lineClass int

const (
	otherLine  lineClass = iota // not an nsguard answer line
	brokenLine                  // starts like an nsguard answer line but does not parse
	answerLine
)

// answerEntry is one answer line nsguard logged.
type answerEntry struct {
	at                  time.Time // zero when the line has no timestamp
	kind                string    // kindNamespace or kindShadow
	subject             string    // the namespace that answered, or the typed name of a shadow
	client, pod         string    // pod is "namespace/name", or "" when nsguard did not know it
	question, typed     string
	answer, records     string
	got, meant          string // endpoint shadows only
	action, fix         string
	repeats, suppressed uint64
}

// The keys of an answer line, as bits, to find missing and repeated ones.
const (
	keyClient = 1 << iota
	keyPod
	keyQuestion
	keyTyped
	keyAnswer
	keyRecords
	keyGot
	keyMeant
	keyAction
	keyFix
	keyRepeats
	keySuppressed
)

var answerKeys = map[string]int{
	"client": keyClient, "pod": keyPod, "question": keyQuestion, "typed": keyTyped,
	"answer": keyAnswer, "records": keyRecords, "got": keyGot, "meant": keyMeant,
	"action": keyAction, "fix": keyFix, "repeats": keyRepeats, "suppressed": keySuppressed,
}

// Every answer line carries these; a line cut short lacks at least the fix, which comes last
// but for repeats and suppressed.
const (
	needAlways = keyClient | keyQuestion | keyTyped | keyRecords | keyAction | keyFix
	needApex   = needAlways | keyAnswer
	needShadow = needAlways | keyGot | keyMeant
)

// parseLine reads one log line.
func parseLine(s string) (answerEntry, lineClass) {
	var e answerEntry
	s, e.at = stripPrefixes(s)
	rest, ok := strings.CutPrefix(s, nsguardWarning)
	if !ok {
		return e, otherLine
	}
	need := needApex
	switch {
	case strings.HasPrefix(rest, apexSubject):
		e.kind, rest = kindNamespace, rest[len(apexSubject):]
	case strings.HasPrefix(rest, shadowSubject):
		e.kind, rest, need = kindShadow, rest[len(shadowSubject):], needShadow
	default:
		return e, otherLine // nsguard's other warnings
	}
	subject, rest, ok := cutQuoted(rest)
	if !ok || !strings.HasPrefix(rest, ":") {
		return e, brokenLine
	}
	e.subject = subject
	have := 0
	p := pairs{rest[1:]}
	for !p.done() {
		k, v, ok := p.next()
		if !ok {
			return e, brokenLine
		}
		bit := answerKeys[k]
		if have&bit != 0 {
			return e, brokenLine
		}
		have |= bit
		if !e.set(bit, v) {
			return e, brokenLine
		}
	}
	if have&need != need {
		return e, brokenLine
	}
	return e, answerLine
}

// set stores the value of one key, and says whether it is well formed.
func (e *answerEntry) set(key int, v string) bool {
	var err error
	switch key {
	case keyClient:
		e.client = v
	case keyPod:
		ns, name, ok := strings.Cut(v, "/")
		e.pod = v
		return ok && ns != "" && name != ""
	case keyQuestion:
		e.question = v
	case keyTyped:
		e.typed = v
	case keyAnswer:
		e.answer = v
	case keyRecords:
		e.records = v
	case keyGot:
		e.got = v
	case keyMeant:
		e.meant = v
	case keyAction:
		e.action = v
	case keyFix:
		e.fix = v
	case keyRepeats:
		e.repeats, err = strconv.ParseUint(v, 10, 64)
	case keySuppressed:
		e.suppressed, err = strconv.ParseUint(v, 10, 64)
	}
	// Keys a later nsguard may add are read and ignored.
	return err == nil
}

// stripPrefixes drops what kubectl and Go's log put before CoreDNS's level: kubectl's
// --prefix "[pod/NAME/CONTAINER] ", then its --timestamps RFC 3339 time, then Go's log date.
// It returns the time of the line, from kubectl when it has one.
func stripPrefixes(s string) (string, time.Time) {
	var at time.Time
	if strings.HasPrefix(s, "[pod/") {
		if _, rest, ok := strings.Cut(s, "] "); ok {
			s = rest
		}
	}
	if stamp, rest, ok := strings.Cut(s, " "); ok {
		if t, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
			s, at = rest, t
		}
	}
	if date, rest, ok := strings.Cut(s, " "); ok {
		if clock, rest, ok := strings.Cut(rest, " "); ok {
			// Go's log has no zone; CoreDNS containers run in UTC, which Parse assumes.
			if t, err := time.Parse(goLogDate, date+" "+clock); err == nil {
				s = rest
				if at.IsZero() {
					at = t
				}
			}
		}
	}
	return s, at
}

// pairs reads the " key=value" pairs of an answer line. Values a client chose are Go
// quoted; the others are bare tokens without spaces.
type pairs struct{ s string }

func (p *pairs) done() bool { return p.s == "" }

func (p *pairs) next() (key, value string, ok bool) {
	rest, ok := strings.CutPrefix(p.s, " ")
	if !ok {
		return "", "", false
	}
	key, rest, ok = strings.Cut(rest, "=")
	if !ok || !isKey(key) {
		return "", "", false
	}
	if strings.HasPrefix(rest, `"`) {
		value, p.s, ok = cutQuoted(rest)
		return key, value, ok
	}
	i := strings.IndexByte(rest, ' ')
	if i < 0 {
		i = len(rest)
	}
	value, p.s = rest[:i], rest[i:]
	return key, value, i > 0
}

// cutQuoted unquotes the Go string s starts with, and returns what follows it.
func cutQuoted(s string) (value, rest string, ok bool) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil || q[0] != '"' {
		return "", s, false
	}
	value, err = strconv.Unquote(q)
	return value, s[len(q):], err == nil
}

func isKey(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range k {
		if (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}
