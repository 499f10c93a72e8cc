// Package logline is the one definition of the answer lines nsguard logs: the plugin writes
// them with Entry.Append and nsguard offenders reads them with Parse. It imports neither
// CoreDNS nor client-go, so the operator CLI can link it.
//
// A line is a subject, a Go-quoted name, a colon and " key=value" pairs:
//
//	answer through namespace "my-app": client=10.244.1.5 pod=new-namespace-1/web question="my-app.svc.cluster.local. A" typed="my-app" answer=nodata records="" action=logged fix="..." repeats=3
//	endpoint shadows a Service "primary.db": client=... question="..." typed="primary.db" got="..." meant="..." records="..." action=logged fix="..."
//
// Values a client chose are always Go quoted; the others (client, pod, answer, action,
// repeats, suppressed) are bare tokens, quoted only when they are not a plain token, so
// that no value can end a pair or a line. Readers ignore keys they do not know.
package logline

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Prefix is what CoreDNS's log puts before the message of a line nsguard warns with.
const Prefix = "[WARNING] plugin/nsguard: "

// Kind is which of the two answer lines a line is.
type Kind uint8

const (
	Apex   Kind = iota + 1 // a name answered through a namespace
	Shadow                 // an endpoint name that shadows a Service
)

// The subjects lines begin with, before the quoted name.
const (
	ApexSubject   = "answer through namespace"
	ShadowSubject = "endpoint shadows a Service"
)

// The keys, in the order nsguard writes them.
const (
	KeyClient     = "client"
	KeyPod        = "pod"
	KeyQuestion   = "question"
	KeyTyped      = "typed"
	KeyAnswer     = "answer"
	KeyRecords    = "records"
	KeyGot        = "got"
	KeyMeant      = "meant"
	KeyAction     = "action"
	KeyFix        = "fix"
	KeyRepeats    = "repeats"
	KeySuppressed = "suppressed"
)

// Entry is one answer line. Pod is "" when nsguard did not know the client's Pod; Answer is
// set on Apex lines only, Got and Meant on Shadow lines only; Repeats and Suppressed are
// written only when not 0.
type Entry struct {
	Kind                Kind
	Subject             string // the namespace that answered, or the typed name of a shadow
	Client, Pod         string
	Question, Typed     string
	Answer, Records     string
	Got, Meant          string
	Action, Fix         string
	Repeats, Suppressed uint64
}

// Append appends the line's message, without Prefix, which the log adds.
func (e *Entry) Append(b []byte) []byte {
	if e.Kind == Shadow {
		b = append(b, ShadowSubject...)
	} else {
		b = append(b, ApexSubject...)
	}
	b = append(b, ' ')
	b = strconv.AppendQuote(b, e.Subject)
	b = append(b, ':')
	b = appendBare(b, KeyClient, e.Client)
	if e.Pod != "" {
		b = appendBare(b, KeyPod, e.Pod)
	}
	b = appendQuoted(b, KeyQuestion, e.Question)
	b = appendQuoted(b, KeyTyped, e.Typed)
	if e.Kind == Shadow {
		b = appendQuoted(b, KeyGot, e.Got)
		b = appendQuoted(b, KeyMeant, e.Meant)
	} else {
		b = appendBare(b, KeyAnswer, e.Answer)
	}
	b = appendQuoted(b, KeyRecords, e.Records)
	b = appendBare(b, KeyAction, e.Action)
	b = appendQuoted(b, KeyFix, e.Fix)
	return appendHeld(b, e.Repeats, e.Suppressed)
}

// appendHeld writes what the log limits held back before a line, when anything was.
func appendHeld(b []byte, repeats, suppressed uint64) []byte {
	if repeats > 0 {
		b = appendUint(b, KeyRepeats, repeats)
	}
	if suppressed > 0 {
		b = appendUint(b, KeySuppressed, suppressed)
	}
	return b
}

// String is the line's message, without Prefix.
func (e *Entry) String() string {
	var buf [512]byte
	return string(e.Append(buf[:0]))
}

func appendKey(b []byte, k string) []byte {
	b = append(b, ' ')
	b = append(b, k...)
	return append(b, '=')
}

func appendQuoted(b []byte, k, v string) []byte {
	return strconv.AppendQuote(appendKey(b, k), v)
}

// appendBare writes v as it is when it is a plain token, else quoted: a value is read back
// the same whatever it holds.
func appendBare(b []byte, k, v string) []byte {
	if !isToken(v) {
		return appendQuoted(b, k, v)
	}
	return append(appendKey(b, k), v...)
}

func appendUint(b []byte, k string, n uint64) []byte {
	return strconv.AppendUint(appendKey(b, k), n, 10)
}

// isToken says whether v can be written bare: not empty, printable ASCII without space,
// and not starting with a quote.
func isToken(v string) bool {
	if v == "" || v[0] == '"' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c >= utf8.RuneSelf || c == 0x7f {
			return false
		}
	}
	return true
}

// The keys, as bits, to find missing and repeated ones.
const (
	bitClient = 1 << iota
	bitPod
	bitQuestion
	bitTyped
	bitAnswer
	bitRecords
	bitGot
	bitMeant
	bitAction
	bitFix
	bitRepeats
	bitSuppressed
)

// Every answer line carries these; a line cut short lacks at least the fix, which comes last
// but for repeats and suppressed.
const (
	needAlways = bitClient | bitQuestion | bitTyped | bitRecords | bitAction | bitFix
	needApex   = needAlways | bitAnswer
	needShadow = needAlways | bitGot | bitMeant
)

// ErrOther is Parse's error for a line that is not an nsguard answer line.
var ErrOther = errors.New("not an nsguard answer line")

// The ways a line that starts like an answer line can be broken; none allocates.
var (
	ErrSubject    = errors.New("no quoted name and colon after the subject")
	ErrPair       = errors.New("not a key=value pair")
	ErrRepeated   = errors.New("a key given twice")
	ErrValue      = errors.New("a malformed value")
	ErrIncomplete = errors.New("a key missing: the line was cut short")
)

// Parse reads a line that starts with Prefix. It returns ErrOther for any other line,
// nsguard's other warnings included, and one of the other errors for a line that starts
// like an answer line but does not parse.
func Parse(line string) (Entry, error) {
	msg, ok := strings.CutPrefix(line, Prefix)
	if !ok {
		return Entry{}, ErrOther
	}
	return ParseMessage(msg)
}

// ParseMessage reads a line's message, without Prefix: what Entry.String writes.
func ParseMessage(msg string) (Entry, error) {
	var e Entry
	need := needApex
	rest, ok := strings.CutPrefix(msg, ApexSubject+" ")
	switch {
	case ok:
		e.Kind = Apex
	default:
		if rest, ok = strings.CutPrefix(msg, ShadowSubject+" "); !ok {
			return e, ErrOther // nsguard's other warnings
		}
		e.Kind, need = Shadow, needShadow
	}
	subject, rest, ok := cutQuoted(rest)
	if !ok || !strings.HasPrefix(rest, ":") {
		return e, ErrSubject
	}
	e.Subject = subject
	have := 0
	p := rest[1:]
	for p != "" {
		var k, v string
		if k, v, p, ok = nextPair(p); !ok {
			return e, ErrPair
		}
		bit := e.set(k, v)
		if bit < 0 {
			return e, ErrValue
		}
		if have&bit != 0 {
			return e, ErrRepeated
		}
		have |= bit
	}
	if have&need != need {
		return e, ErrIncomplete
	}
	return e, nil
}

// set stores the value of key k and returns its bit: 0 for a key a later nsguard may add,
// which is read and ignored, and -1 for a malformed value.
func (e *Entry) set(k, v string) int {
	switch k {
	case KeyClient:
		e.Client = v
		return bitClient
	case KeyPod:
		e.Pod = v
		if ns, name, ok := strings.Cut(v, "/"); !ok || ns == "" || name == "" {
			return -1
		}
		return bitPod
	case KeyQuestion:
		e.Question = v
		return bitQuestion
	case KeyTyped:
		e.Typed = v
		return bitTyped
	case KeyAnswer:
		e.Answer = v
		return bitAnswer
	case KeyRecords:
		e.Records = v
		return bitRecords
	case KeyGot:
		e.Got = v
		return bitGot
	case KeyMeant:
		e.Meant = v
		return bitMeant
	case KeyAction:
		e.Action = v
		return bitAction
	case KeyFix:
		e.Fix = v
		return bitFix
	case KeyRepeats, KeySuppressed:
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return -1
		}
		if k == KeyRepeats {
			e.Repeats = n
			return bitRepeats
		}
		e.Suppressed = n
		return bitSuppressed
	}
	return 0
}

// nextPair reads one " key=value" pair off s: a quoted value, or a bare one up to the next
// space.
func nextPair(s string) (key, value, rest string, ok bool) {
	s, ok = strings.CutPrefix(s, " ")
	if !ok {
		return "", "", s, false
	}
	key, s, ok = strings.Cut(s, "=")
	if !ok || !isKey(key) {
		return "", "", s, false
	}
	if strings.HasPrefix(s, `"`) {
		value, rest, ok = cutQuoted(s)
		return key, value, rest, ok
	}
	i := strings.IndexByte(s, ' ')
	if i < 0 {
		i = len(s)
	}
	return key, s[:i], s[i:], i > 0
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
	for i := 0; i < len(k); i++ {
		if c := k[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

// String is the kind as nsguard offenders' rows and nsguard's metadata name it.
func (k Kind) String() string {
	if k == Shadow {
		return "endpoint shadow"
	}
	return "namespace"
}
