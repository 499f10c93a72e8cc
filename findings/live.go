// Package findings runs nsguard audit's checks as the cluster changes, beside the query
// path: the live findings of one server block. It reads the cluster view through Source,
// logs a finding when it appears and when it goes, and keeps what holds now in a Book that
// a Corefile reload hands to the next instance.
package findings

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	clog "github.com/coredns/coredns/plugin/pkg/log"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/internal/jsonlog"
	"github.com/nsguard/nsguard/logline"
)

var log = clog.NewWithPlugin("nsguard")

// Every is how often the live findings look at the view: a finding is logged and counted
// within about this long after the change that makes it, except a namespace made with a
// Service's name, which takes a look per LookPerRefresh candidate names.
const Every = time.Second

// maxAliasChain bounds how far back along ExternalName Services a change is followed: the
// chains that cluster DNS follows are at most this long.
const maxAliasChain = 8

// Config is what the live findings of one server block check and whom they tell.
type Config struct {
	Zones   []string            // the guarded zones
	Allowed map[string]struct{} // allow namespace: meant to answer their bare names
	// Allow applies the log limits to the line of key: whether it may be logged now, with
	// the repeats of the same key and the other lines held back before it, or why not.
	Allow func(key []byte) (ok bool, repeats, suppressed uint64, reason string)
	// Suppressed counts a line the log limits held back.
	Suppressed func(reason string)
	// Event, when set, is told each finding about a Namespace when it appears
	// (namespace_events).
	Event func(audit.Finding)
}

// Live tells, as the cluster changes, what nsguard audit would find: it runs the audit's
// own checks for the names each change touches, logs a finding when it appears and when it
// goes, and keeps those that hold in its Book. It works beside the query path, never on it.
type Live struct {
	src   Source
	cfg   Config
	zones []string // lower case, without the trailing dot
	book  *Book
	names *Names // nil until the first look after the book was taken

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns the live findings of src, which write book.
func New(src Source, book *Book, cfg Config) *Live {
	l := &Live{src: src, cfg: cfg, book: book}
	for _, z := range cfg.Zones {
		l.zones = append(l.zones, strings.ToLower(strings.TrimSuffix(z, ".")))
	}
	return l
}

// Start takes the book over and looks at the view every second, once it has synced. The
// first look runs every check: what the book held and it does not find is gone, and what
// it finds that the book did not hold is news. Any other writer of the book stops writing.
func (l *Live) Start() {
	l.book.take(l)
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(ctx)
}

// Take takes the book back, as at Start: a reload that failed after its own loop took it.
func (l *Live) Take() { l.book.take(l) }

// Stop ends the loop; what it found stays in the book.
func (l *Live) Stop() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	<-l.done
}

func (l *Live) run(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if l.src.Synced() {
			l.tick()
		}
	}
}

// tick refreshes the index and runs the checks of what changed; the first after the book
// was taken runs every check.
func (l *Live) tick() {
	owner, fresh := l.book.ownedBy(l)
	if !owner {
		return // a reload's new instance took the book over
	}
	if fresh || l.names == nil {
		l.names = NewNames(l.src)
	}
	ch := l.names.Refresh()
	now := map[string][]audit.Finding{}
	for _, z := range l.zones {
		for _, name := range ch.Namespaces {
			now[namespaceOwner(name, z)] = l.unlessAllowed(name, audit.NamespaceFindings(l.names, name, z))
		}
		for _, s := range l.aliasesTouched(ch.Services, z) {
			var fs []audit.Finding
			if f, ok := audit.AliasFinding(l.names, s.Namespace, s.Name, z); ok {
				fs = []audit.Finding{f}
			}
			now[serviceOwner(s.Namespace, s.Name, z)] = fs
		}
	}
	l.book.apply(l, now, l.report)
}

// unlessAllowed drops the answers through namespace name that 'allow namespace' says are
// meant: its captures, and what kube-dns answers for it. A reserved name stays a finding.
func (l *Live) unlessAllowed(name string, fs []audit.Finding) []audit.Finding {
	if _, ok := l.cfg.Allowed[name]; !ok {
		return fs
	}
	return slices.DeleteFunc(fs, func(f audit.Finding) bool {
		return f.Check == audit.CheckNamespaceCapture || f.Check == audit.CheckApexAnswers
	})
}

// aliasesTouched are the changed Services and every ExternalName Service whose chain leads
// to one of them: their alias findings may have changed.
func (l *Live) aliasesTouched(changed []audit.Ref, zone string) []audit.Ref {
	seen := map[string]bool{}
	var out []audit.Ref
	next := changed
	for depth := 0; len(next) > 0 && depth <= maxAliasChain; depth++ {
		var later []audit.Ref
		for _, s := range next {
			if k := s.Namespace + "/" + s.Name; !seen[k] {
				seen[k] = true
				out = append(out, s)
				later = append(later, l.names.AliasesOf(s.Name+"."+s.Namespace+".svc."+zone+".")...)
			}
		}
		next = later
	}
	return out
}

// report logs a finding that appeared or went, within the log limits, and tells Event of
// one about a Namespace that appeared.
func (l *Live) report(f audit.Finding, gone bool) {
	subject := ""
	if len(f.Objects) > 0 {
		subject = f.Objects[0].String()
		if l.cfg.Event != nil && !gone && f.Objects[0].Kind == "Namespace" {
			l.cfg.Event(f)
		}
	}
	key := make([]byte, 0, 128)
	key = append(key, "finding\x00"...)
	key = append(key, f.Check...)
	key = append(key, 0)
	key = append(key, subject...)
	if gone {
		key = append(key, "\x00gone"...)
	}
	ok, repeats, suppressed, reason := true, uint64(0), uint64(0), ""
	if l.cfg.Allow != nil {
		ok, repeats, suppressed, reason = l.cfg.Allow(key)
	}
	if !ok {
		if l.cfg.Suppressed != nil {
			l.cfg.Suppressed(reason)
		}
		return
	}
	line := logline.Finding{Gone: gone, Subject: subject, Check: f.Check, Severity: string(f.Severity),
		Name: f.Name, Message: f.Message, Fix: f.Fix, Repeats: repeats, Suppressed: suppressed}
	if gone {
		line.Message = "no longer holds: " + f.Message
	}
	if jsonlog.On() {
		level := slog.LevelWarn
		if gone || f.Severity == audit.Info {
			level = slog.LevelInfo
		}
		jsonlog.Log(level, line.Msg(), line.Attrs()...)
		return
	}
	msg := string(line.Append(make([]byte, 0, 512)))
	if gone || f.Severity == audit.Info {
		log.Info(msg)
	} else {
		log.Warning(msg)
	}
}

func namespaceOwner(name, zone string) string   { return "namespace " + name + " " + zone }
func serviceOwner(ns, name, zone string) string { return "service " + ns + "/" + name + " " + zone }
