// Package jsonlog writes nsguard's lines as JSON records with typed attributes when CoreDNS
// runs with -log-format json. CoreDNS's log offers typed attributes only at INFO and keeps its
// JSON handler private, so nsguard encodes its own records, with the same keys (time, level,
// msg, plugin), onto the same output.
//
// Each record is one write of at most PIPE_BUF bytes: the kernel writes such a write to a pipe
// whole, never interleaved with CoreDNS's own records, which are one write each too.
package jsonlog

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	clog "github.com/coredns/coredns/plugin/pkg/log"
)

// MaxRecord is PIPE_BUF on Linux: the largest write a pipe takes whole.
const MaxRecord = 4096

// minCut is the length a value is never cut below, to fit a record into MaxRecord.
const minCut = 64

var (
	mu  sync.Mutex
	out io.Writer = os.Stdout // where coremain configures CoreDNS's log
)

// On reports whether CoreDNS logs JSON records (-log-format json).
func On() bool { return clog.IsJSON() }

// SetOutput sets where records go, and returns the output before; for tests.
func SetOutput(w io.Writer) io.Writer {
	mu.Lock()
	defer mu.Unlock()
	before := out
	out = w
	return before
}

// Info writes an INFO record.
func Info(msg string, attrs ...slog.Attr) { Log(slog.LevelInfo, msg, attrs...) }

// Warn writes a WARN record: a [WARNING] line in text mode.
func Warn(msg string, attrs ...slog.Attr) { Log(slog.LevelWarn, msg, attrs...) }

// Error writes an ERROR record.
func Error(msg string, attrs ...slog.Attr) { Log(slog.LevelError, msg, attrs...) }

// Log writes one record of nsguard's at level, its attributes after plugin=nsguard. A record
// longer than MaxRecord has its longest string values cut, each marked with "…", until it fits.
func Log(level slog.Level, msg string, attrs ...slog.Attr) {
	r := slog.NewRecord(time.Now(), level, msg, 0)
	var buf bytes.Buffer
	for {
		buf.Reset()
		rec := r.Clone()
		rec.AddAttrs(slog.String("plugin", "nsguard"))
		rec.AddAttrs(attrs...)
		_ = slog.NewJSONHandler(&buf, nil).Handle(context.Background(), rec)
		if buf.Len() <= MaxRecord || !cutLongest(attrs) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	out.Write(buf.Bytes())
}

// cutLongest halves the longest string value of attrs, and reports whether one was long
// enough to cut.
func cutLongest(attrs []slog.Attr) bool {
	longest := -1
	for i, a := range attrs {
		if a.Value.Kind() == slog.KindString && len(a.Value.String()) > minCut &&
			(longest < 0 || len(a.Value.String()) > len(attrs[longest].Value.String())) {
			longest = i
		}
	}
	if longest < 0 {
		return false
	}
	s := attrs[longest].Value.String()
	n := len(s) / 2
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	attrs[longest].Value = slog.StringValue(s[:n] + "…")
	return true
}
