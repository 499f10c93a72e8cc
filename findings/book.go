package findings

import (
	"sync"

	"github.com/nsguard/nsguard/audit"
)

// Severities are the check and severity pairs the live checks can report: their series are
// there at 0 from the start, so that alerts and dashboards see them.
var Severities = []struct {
	Check    string
	Severity audit.Severity
}{
	{audit.CheckNamespaceCapture, audit.Error}, {audit.CheckNamespaceCapture, audit.Warning},
	{audit.CheckApexAnswers, audit.Info},
	{audit.CheckReserved, audit.Error}, {audit.CheckReserved, audit.Warning}, {audit.CheckReserved, audit.Info},
	{audit.CheckAliasNamespace, audit.Error}, {audit.CheckAliasDangling, audit.Warning}, {audit.CheckAliasLoop, audit.Error},
}

// Book is what the live findings of one server block hold now. It outlives the loop that
// writes it: a Corefile reload starts the new instance before it stops the old one, and the
// new loop takes the book over, so it neither logs again what the old one logged nor misses
// what changed between their looks.
type Book struct {
	onChange func() // after each look that changed what holds

	mu     sync.Mutex
	owner  *Live                               // the loop that writes
	fresh  bool                                // the owner has not looked since it took the book
	looked bool                                // a loop has looked at the view: what it holds is what holds
	held   map[string]map[string]audit.Finding // owner of the finding → check → finding
}

// NewBook returns an empty book; onChange, if set, is called after each look that changed
// what it holds, outside its lock.
func NewBook(onChange func()) *Book {
	return &Book{onChange: onChange, held: map[string]map[string]audit.Finding{}}
}

// take makes l the only writer: its first look runs every check.
func (b *Book) take(l *Live) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.owner, b.fresh = l, true
}

// ownedBy reports whether l writes the book, and whether it has not looked since it took it.
func (b *Book) ownedBy(l *Live) (owner, fresh bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.owner == l, b.owner == l && b.fresh
}

// apply records the findings l found now for each owner it looked at, and reports what
// appeared and went. The first apply after l took the book is all there is: what the book
// held and l did not find is gone. A loop that does not own the book writes nothing.
func (b *Book) apply(l *Live, now map[string][]audit.Finding, report func(audit.Finding, bool)) {
	if b.record(l, now, report) && b.onChange != nil {
		b.onChange()
	}
}

// Looked reports whether a loop has looked at the view since the book was made: until then
// it holds nothing because nothing was looked at, not because nothing holds.
func (b *Book) Looked() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.looked
}

// record is apply under the lock; it reports whether what the book holds changed, or it was
// looked at for the first time.
func (b *Book) record(l *Live, now map[string][]audit.Finding, report func(audit.Finding, bool)) (changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.owner != l {
		return false
	}
	if !b.looked {
		b.looked, changed = true, true
	}
	if b.fresh {
		b.fresh = false
		for owner := range b.held {
			if _, ok := now[owner]; !ok {
				now[owner] = nil
			}
		}
	}
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
				changed = true
			}
		}
		for check, f := range is {
			if old, ok := was[check]; !ok || old.Severity != f.Severity {
				report(f, false)
				changed = true
			}
		}
		if len(is) == 0 {
			delete(b.held, owner)
		} else {
			b.held[owner] = is
		}
	}
	return changed
}

// Each calls f with every finding that holds: the owner it is of (a namespace or Service in
// a zone), its check and its severity.
func (b *Book) Each(f func(owner, check string, sev audit.Severity)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for owner, checks := range b.held {
		for check, fd := range checks {
			f(owner, check, fd.Severity)
		}
	}
}

// Counts returns how many findings hold, by check and severity.
func (b *Book) Counts() map[string]map[audit.Severity]int {
	out := map[string]map[audit.Severity]int{}
	b.Each(func(_, check string, sev audit.Severity) {
		if out[check] == nil {
			out[check] = map[audit.Severity]int{}
		}
		out[check][sev]++
	})
	return out
}
