package nsguard

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
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

	seed maphash.Seed
	// During an incident nearly every held answer is a client and question never logged,
	// after the second's lines are spent. That answer takes neither the lock nor the map: spent
	// and known tell it, read by every CPU and written only when a line is logged, and it adds
	// one to suppressed.
	spent      atomic.Int64  // 1 + the second of the clock whose lines are spent; 0 for none
	known      knownKeys     // the keys in logged, and maybe some gone since
	suppressed atomic.Uint64 // lines held back for no remembered key since the last line logged

	mu     sync.Mutex
	logged map[uint64]seen // hash of the key → when it was last logged
	second int64           // the second of the clock lines are being counted in
	lines  int             // lines logged in that second
}

// knownKeys is a bit per hash of a remembered key, so that a key never logged is told
// without the lock. A bit may stay set for a key that is gone, or be shared with another
// key: then the lock and the map decide. No remembered key's bit is ever clear, except
// while forget rebuilds them: an answer then counted as suppressed rather than as its key's
// repeat is still counted, by the next line.
type knownKeys [knownWords]atomic.Uint64

// knownWords is 8 KiB of bits: at maxRemembered keys about one key in seven never logged
// finds its bit set by another.
const knownWords = 1024

func (k *knownKeys) bit(h uint64) (*atomic.Uint64, uint64) {
	b := h % (64 * knownWords)
	return &k[b/64], 1 << (b % 64)
}

func (k *knownKeys) has(h uint64) bool {
	w, m := k.bit(h)
	return w.Load()&m != 0
}

func (k *knownKeys) add(h uint64) {
	if w, m := k.bit(h); w.Load()&m == 0 {
		w.Or(m)
	}
}

// reset leaves the bits of the keys of logged only.
func (k *knownKeys) reset(logged map[uint64]seen) {
	for i := range k {
		k[i].Store(0)
	}
	for h := range logged {
		k.add(h)
	}
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
	s := int64(now / time.Second)
	if l.spent.Load() == s+1 && !l.known.has(h) {
		l.suppressed.Add(1)
		return false, heldBack{}, reasonLimit
	}
	l.mu.Lock()
	defer l.mu.Unlock()

	if s != l.second {
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
		l.suppressed.Add(1)
		return false, heldBack{}, reasonLimit
	}
	if l.lines++; l.lines >= l.limit {
		l.spent.Store(l.second + 1)
	}
	if known {
		held.repeats = last.repeats
	} else if len(l.logged) >= maxRemembered {
		l.forgetAll()
	}
	l.logged[h] = seen{at: now}
	l.known.add(h)
	held.suppressed = l.suppressed.Swap(0)
	return true, held, ""
}

// forget drops keys whose interval has passed, unless they hold repeats for the client's
// next line. It runs at most once a second.
func (l *logLimiter) forget(now time.Duration) {
	n := len(l.logged)
	for k, s := range l.logged {
		if s.repeats == 0 && now-s.at >= l.interval {
			delete(l.logged, k)
		}
	}
	if len(l.logged) < n {
		l.known.reset(l.logged)
	}
}

// forgetAll starts the memory afresh. The repeats it held are told as suppressed by the line
// about to be logged: no answer may drop out of every line's count.
func (l *logLimiter) forgetAll() {
	for _, s := range l.logged {
		l.suppressed.Add(s.repeats)
	}
	clear(l.logged)
	l.known.reset(l.logged)
}
