package nsguard

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/clusterview"
	"github.com/nsguard/nsguard/logline"
)

// findingsEvery is how often the live findings look at the view: a finding is logged and
// counted within about this long after the change that makes it, except a namespace made
// with a Service's name, which takes a look per clusterview.LookPerRefresh Service names.
const findingsEvery = time.Second

// maxAliasChain bounds how far back along ExternalName Services a change is followed: the
// chains that cluster DNS follows are at most this long.
const maxAliasChain = 8

// liveFindings tells, as the cluster changes, what nsguard audit would find: it runs the
// audit's own checks for the names each change touches, logs a finding when it appears and
// when it goes, and counts those that hold in the findings gauge. It works beside the
// query path, never on it.
type liveFindings struct {
	view    *clusterview.View
	names   *clusterview.Names
	zones   []string            // lower case, without the trailing dot
	allowed map[string]struct{} // allow namespace: meant to answer their bare names
	limiter *logLimiter
	events  *eventer // namespace_events: an Event on the Namespace of each finding; nil if off
	book    *findingBook
	servers []string

	seq    uint64 // later instances have larger ones: the newest takes the book
	cancel context.CancelFunc
	done   chan struct{}
}

var instances atomic.Uint64

func newLiveFindings(v *clusterview.View, zones []string, allowed map[string]struct{}, limiter *logLimiter, servers []string) *liveFindings {
	l := &liveFindings{view: v, allowed: allowed, limiter: limiter, servers: servers, book: bookFor(servers), seq: instances.Add(1)}
	for _, z := range zones {
		l.zones = append(l.zones, strings.ToLower(strings.TrimSuffix(z, ".")))
	}
	return l
}

func (l *liveFindings) start() {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go l.run(ctx)
}

// stop ends the loop. The findings it holds stay in the book for the instance a reload
// starts, which tells only what changed meanwhile.
func (l *liveFindings) stop() {
	if l.cancel == nil {
		return
	}
	l.cancel()
	<-l.done
	l.book.release(l)
}

func (l *liveFindings) run(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(findingsEvery)
	defer t.Stop()
	looked := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !l.view.Synced() {
			continue
		}
		if !looked {
			clusterview.FreshHeapGoal() // the first look runs every check, just after the kubernetes plugin's sync
			looked = true
		}
		l.tick()
	}
}

// tick refreshes the view's index and runs the checks of what changed. The first takes the
// book over from the instance before a reload, if any: it runs every check once, and the
// book tells which of its findings are news.
func (l *liveFindings) tick() {
	if l.names == nil {
		l.names = l.view.Names()
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
func (l *liveFindings) unlessAllowed(name string, fs []audit.Finding) []audit.Finding {
	if _, ok := l.allowed[name]; !ok {
		return fs
	}
	return slices.DeleteFunc(fs, func(f audit.Finding) bool {
		return f.Check == audit.CheckNamespaceCapture || f.Check == audit.CheckApexAnswers
	})
}

// aliasesTouched are the changed Services and every ExternalName Service whose chain leads
// to one of them: their alias findings may have changed.
func (l *liveFindings) aliasesTouched(changed []audit.Ref, zone string) []audit.Ref {
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

// report logs a finding that appeared or went, within the log limits, and with
// namespace_events records one that appeared on the Namespace it is about.
func (l *liveFindings) report(f audit.Finding, gone bool) {
	subject := ""
	if len(f.Objects) > 0 {
		subject = f.Objects[0].String()
		if o := f.Objects[0]; l.events != nil && !gone && o.Kind == "Namespace" && len(l.servers) > 0 {
			l.events.offerFinding(l.servers[0], namespaceFinding{namespace: o.Name, check: f.Check,
				severity: string(f.Severity), message: f.Message, fix: f.Fix})
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
	ok, held, reason := l.limiter.allow(key)
	if !ok {
		for _, s := range l.servers {
			logLinesSuppressed.WithLabelValues(s, reason).Inc() // rare: no cached series
		}
		return
	}
	line := logline.Finding{Gone: gone, Subject: subject, Check: f.Check, Severity: string(f.Severity),
		Name: f.Name, Message: f.Message, Fix: f.Fix, Repeats: held.repeats, Suppressed: held.suppressed}
	if gone {
		line.Message = "no longer holds: " + f.Message
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

// liveSeverities are the check and severity pairs the live checks can report: their
// series are there at 0 from the start, so that alerts and dashboards see them.
var liveSeverities = []struct {
	check    string
	severity audit.Severity
}{
	{audit.CheckNamespaceCapture, audit.Error}, {audit.CheckNamespaceCapture, audit.Warning},
	{audit.CheckApexAnswers, audit.Info},
	{audit.CheckReserved, audit.Error}, {audit.CheckReserved, audit.Warning}, {audit.CheckReserved, audit.Info},
	{audit.CheckAliasNamespace, audit.Error}, {audit.CheckAliasDangling, audit.Warning}, {audit.CheckAliasLoop, audit.Error},
}

// findingBook is what the live findings of one set of servers hold now, kept across a
// reload: a Corefile reload starts the new instance before it stops the old one, and the
// new one takes the book over at its first look, so it neither logs again what the old one
// logged nor misses what changed between their looks.
type findingBook struct {
	key string // the servers, joined

	mu      sync.Mutex
	owner   *liveFindings                       // the instance that writes; nil between two
	lastSeq uint64                              // of the newest instance that took the book
	held    map[string]map[string]audit.Finding // owner of the finding → check → finding
	counts  map[string]map[audit.Severity]int   // check → severity → findings
	expire  *time.Timer                         // forgets the book when no instance takes it over
}

// bookKeep is how long a book outlives the instance that wrote it: a reload's new instance
// takes it over once its view has synced, well within this.
const bookKeep = 5 * time.Minute

var (
	booksMu sync.Mutex
	books   = map[string]*findingBook{}
)

// bookFor returns the book of servers, made when there is none.
func bookFor(servers []string) *findingBook {
	key := strings.Join(servers, ",")
	booksMu.Lock()
	defer booksMu.Unlock()
	b := books[key]
	if b == nil {
		b = &findingBook{key: key}
		b.reset()
		books[key] = b
	}
	return b
}

// reset empties the book: every live check and severity at 0.
func (b *findingBook) reset() {
	b.held, b.counts = map[string]map[string]audit.Finding{}, map[string]map[audit.Severity]int{}
	for _, cs := range liveSeverities {
		b.add(cs.check, cs.severity, 0)
	}
}

func (b *findingBook) add(check string, sev audit.Severity, d int) {
	m := b.counts[check]
	if m == nil {
		m = map[audit.Severity]int{}
		b.counts[check] = m
	}
	m[sev] += d
}

// apply records the findings l found now for each owner it looked at. The first apply of
// an instance takes the book over, and what l found is then all there is: what the book
// held and l did not find is gone. An instance older than the book's last writer writes
// nothing.
func (b *findingBook) apply(l *liveFindings, now map[string][]audit.Finding, report func(audit.Finding, bool)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	takeover := false
	switch {
	case b.owner == l:
	case l.seq > b.lastSeq:
		takeover, b.owner, b.lastSeq = true, l, l.seq
		if b.expire != nil {
			b.expire.Stop()
			b.expire = nil
		}
		for owner := range b.held {
			if _, ok := now[owner]; !ok {
				now[owner] = nil
			}
		}
	default:
		return
	}
	changed := map[string]bool{}
	for owner, fs := range now {
		was := b.held[owner]
		is := map[string]audit.Finding{}
		for _, f := range fs {
			is[f.Check] = f
		}
		for check, old := range was {
			f, ok := is[check]
			if !ok {
				report(old, true)
			}
			if !ok || f.Severity != old.Severity {
				b.add(check, old.Severity, -1)
				changed[check] = true
			}
		}
		for check, f := range is {
			if old, ok := was[check]; !ok || old.Severity != f.Severity {
				report(f, false)
				b.add(check, f.Severity, 1)
				changed[check] = true
			}
		}
		if len(is) == 0 {
			delete(b.held, owner)
		} else {
			b.held[owner] = is
		}
	}
	for check, bySev := range b.counts {
		if !takeover && !changed[check] {
			continue
		}
		for sev, n := range bySev {
			for _, s := range l.servers {
				findings.WithLabelValues(s, check, string(sev)).Set(float64(n))
			}
		}
	}
}

// release is l stopping. The book waits for a reload's new instance; when none takes it
// over in bookKeep, CoreDNS no longer runs these servers with nsguard, and the gauge goes.
func (b *findingBook) release(l *liveFindings) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owner != l {
		return
	}
	b.owner = nil
	b.expire = time.AfterFunc(bookKeep, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.owner != nil {
			return
		}
		b.reset() // a later instance tells every finding afresh
		for _, s := range l.servers {
			findings.DeletePartialMatch(map[string]string{"server": s})
		}
	})
}
