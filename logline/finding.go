package logline

import "strconv"

// The subjects of the lines about findings of the live checks: one when a finding appears
// (or its severity changes), one when it is gone. Parse reads neither (ErrOther): they are
// about the cluster, not about an answer.
const (
	FindingSubject     = "cluster finding"
	FindingGoneSubject = "cluster finding gone"
)

// The keys of a finding line, in the order nsguard writes them.
const (
	KeyCheck    = "check"
	KeySeverity = "severity"
	KeyName     = "name"
	KeyMessage  = "message"
)

// Finding is one line about a finding, as nsguard audit reports it: Subject is its first
// object ("Namespace my-app"), Name the DNS name that answers wrongly ("" for none).
type Finding struct {
	Gone                bool
	Subject             string
	Check, Severity     string
	Name, Message, Fix  string
	Repeats, Suppressed uint64
}

// Append appends the line's message, without the log's prefix.
func (f *Finding) Append(b []byte) []byte {
	if f.Gone {
		b = append(b, FindingGoneSubject...)
	} else {
		b = append(b, FindingSubject...)
	}
	b = append(b, ' ')
	b = strconv.AppendQuote(b, f.Subject)
	b = append(b, ':')
	b = appendBare(b, KeyCheck, f.Check)
	b = appendBare(b, KeySeverity, f.Severity)
	if f.Name != "" {
		b = appendQuoted(b, KeyName, f.Name)
	}
	b = appendQuoted(b, KeyMessage, f.Message)
	if !f.Gone {
		b = appendQuoted(b, KeyFix, f.Fix)
	}
	return appendHeld(b, f.Repeats, f.Suppressed)
}
