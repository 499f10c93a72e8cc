package nsguard

import (
	"sync"
	"time"
)

// maxRemembered bounds the memory of who was logged; past it the memory starts afresh,
// which can only repeat a line, never lose a count.
const maxRemembered = 10000

// logLimiter keeps nsguard's log bounded under any load: one line per (client, question)
// per interval, and at most limit lines in any one second overall.
type logLimiter struct {
	interval time.Duration
	limit    int
	now      func() time.Time

	mu         sync.Mutex
	logged     map[string]time.Time // key → when it was last logged
	second     int64                // the Unix second lines are being counted in
	lines      int                  // lines logged in that second
	suppressed uint64               // lines held back since the last line logged
}

func newLogLimiter(interval time.Duration, limit int) *logLimiter {
	return &logLimiter{interval: interval, limit: limit, now: time.Now, logged: map[string]time.Time{}}
}

// allow reports whether a line for key may be logged now. If so, it also returns how many
// lines were held back since the last one; if not, it returns why.
func (l *logLimiter) allow(key []byte) (ok bool, suppressed uint64, reason string) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()

	if s := now.Unix(); s != l.second {
		l.second, l.lines = s, 0
		l.forget(now)
	}
	if last, seen := l.logged[string(key)]; seen && now.Sub(last) < l.interval {
		l.suppressed++
		return false, 0, reasonRepeat
	}
	if l.lines >= l.limit {
		l.suppressed++
		return false, 0, reasonLimit
	}
	l.lines++
	l.logged[string(key)] = now
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed, ""
}

// forget drops keys whose interval has passed. It runs at most once a second.
func (l *logLimiter) forget(now time.Time) {
	if len(l.logged) >= maxRemembered {
		clear(l.logged)
		return
	}
	for k, t := range l.logged {
		if now.Sub(t) >= l.interval {
			delete(l.logged, k)
		}
	}
}
