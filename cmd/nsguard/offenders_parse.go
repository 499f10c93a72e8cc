package main

import (
	"errors"
	"strings"
	"time"

	"github.com/nsguard/nsguard/logline"
)

// The line reading: kubectl's and Go's prefixes here, then nsguard's own line, whose format
// package logline defines for the plugin and this command alike.

// The kinds of answer line, as rows name them.
const (
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
	logline.Entry
	at   time.Time // zero when the line has no timestamp
	kind string    // kindNamespace or kindShadow
}

// parseLine reads one log line.
func parseLine(s string) (answerEntry, lineClass) {
	var e answerEntry
	s, e.at = stripPrefixes(s)
	var err error
	if strings.HasPrefix(s, "{") {
		// -log-format json: one record a line, its time CoreDNS's own.
		e.Entry, err = logline.ParseJSON(s)
		if e.at.IsZero() {
			e.at = recordTime(s)
		}
	} else {
		e.Entry, err = logline.Parse(s)
	}
	switch {
	case errors.Is(err, logline.ErrOther):
		return e, otherLine
	case err != nil:
		return e, brokenLine
	}
	e.kind = kindNamespace
	if e.Kind == logline.Shadow {
		e.kind = kindShadow
	}
	return e, answerLine
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
			if t, err := time.Parse(goLogDate, s[:len(date)+1+len(clock)]); err == nil {
				s = rest
				if at.IsZero() {
					at = t
				}
			}
		}
	}
	return s, at
}

// recordTime is the time of a JSON record, which CoreDNS's log writes first; zero if none.
func recordTime(s string) time.Time {
	v, ok := strings.CutPrefix(s, `{"time":"`)
	if !ok {
		return time.Time{}
	}
	v, _, _ = strings.Cut(v, `"`)
	t, _ := time.Parse(time.RFC3339Nano, v)
	return t
}
