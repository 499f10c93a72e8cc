package nsguard

import (
	"hash/maphash"
	"sync"
	"time"
)

// maxRemembered bounds the memory of who was logged, whatever log_limit and log_interval
// say: at most this many keys, under 1 MB. Past it the memory starts afresh: that can repeat
// a line, and the repeats the forgotten keys held go to the next line's suppressed count, so
// none is lost.
const maxRemembered = 10000

// logLimiter keeps nsguard's log bounded under any load: one line per (client, question)
// per interval, and at most limit lines in any one second overall.
type logLimiter struct {
	interval time.Duration
	limit    int
	// clock is the monotonic time since the limiter was made: one read of the clock, where
	// time.Now makes two, on every held answer. Times are kept as durations, so that logged
	// holds no pointer.
	clock func() time.Duration

	seed       maphash.Seed
	mu         sync.Mutex
	logged     map[uint64]seen // hash of the key → when it was last logged
	second     int64           // the second of the clock lines are being counted in
	lines      int             // lines logged in that second
	suppressed uint64          // lines held back for no remembered key since the last line logged
}

// seen is a key's last line, and the repeats held back since. It holds no pointer: the
// garbage collector need not scan the limiter's memory, up to maxRemembered keys.
type seen struct {
	at      time.Duration // on the limiter's clock
	repeats uint64
}

// heldBack is what a line reports of the lines held back before it. Each held-back line is
// in one of the two: a client and question remembered keeps its own count.
type heldBack struct {
	suppressed uint64 // of clients and questions not remembered, since the line before
	repeats    uint64 // of the same client and question, since its own last line
}

func newLogLimiter(interval time.Duration, limit int) *logLimiter {
	start := time.Now()
	return &logLimiter{interval: interval, limit: limit, clock: func() time.Duration { return time.Since(start) },
		seed: maphash.MakeSeed(), logged: map[uint64]seen{}}
}

// allow reports whether a line for key may be logged now, with what was held back before
// it; if it may not, it says why. Keys are remembered by a 64-bit hash, with a seed of this
// process: a small map of fixed-size entries keeps the query path's memory reads few, and two
// keys that collide among at most maxRemembered would only share one line's repeat count.
func (l *logLimiter) allow(key []byte) (ok bool, held heldBack, reason string) {
	h := maphash.Bytes(l.seed, key)
	now := l.clock()
	l.mu.Lock()
	defer l.mu.Unlock()

	// An answer that read the clock before another may take the lock after it: a late answer
	// of an earlier second counts in the current one, or it would start that second's lines
	// again.
	if s := int64(now / time.Second); s > l.second {
		l.second, l.lines = s, 0
		l.forget(now)
	}
	last, known := l.logged[h]
	switch {
	case known && now-last.at < l.interval:
		last.repeats++
		l.logged[h] = last
		return false, heldBack{}, reasonRepeat
	case l.lines < l.limit:
	case known:
		last.repeats++
		l.logged[h] = last
		return false, heldBack{}, reasonLimit
	default:
		l.suppressed++
		return false, heldBack{}, reasonLimit
	}
	l.lines++
	if known {
		held.repeats = last.repeats
	} else if len(l.logged) >= maxRemembered {
		l.forgetAll()
	}
	l.logged[h] = seen{at: now}
	held.suppressed, l.suppressed = l.suppressed, 0
	return true, held, ""
}

// forget drops keys whose interval has passed, unless they hold repeats for the client's
// next line. It runs at most once a second.
func (l *logLimiter) forget(now time.Duration) {
	for k, s := range l.logged {
		if s.repeats == 0 && now-s.at >= l.interval {
			delete(l.logged, k)
		}
	}
}

// forgetAll starts the memory afresh. The repeats it held are told as suppressed by the line
// about to be logged: no answer may drop out of every line's count.
func (l *logLimiter) forgetAll() {
	for _, s := range l.logged {
		l.suppressed += s.repeats
	}
	clear(l.logged)
}
