package nsguard

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// maxRemembered bounds the memory of who was logged, whatever log_limit and log_interval
// say: at most this many keys, under 1 MB. Past it the memory starts afresh: that can repeat
// a line, and the repeats the forgotten keys held go to the next line's suppressed count, so
// none is lost.
const maxRemembered = 10000

// limiterShards is how many parts the memory of who was logged is split into, each with a
// lock of its own. During an incident every held answer passes the limiter, from every CPU
// at once: one lock and one map for all of them made the CPUs wait for each other and pass
// the map's memory back and forth, so that a held answer cost twice the CPU on two CPUs that
// it cost on one.
const limiterShards = 64

// rememberedPerShard bounds each part, so that all of them hold at most maxRemembered keys.
const rememberedPerShard = maxRemembered / limiterShards

// logLimiter keeps nsguard's log bounded under any load: one line per (client, question)
// per interval, and at most limit lines in any one second overall.
type logLimiter struct {
	interval time.Duration
	limit    int
	// clock is the monotonic time since the limiter was made: one read of the clock, where
	// time.Now makes two, on every held answer. Times are kept as durations, so that logged
	// holds no pointer.
	clock func() time.Duration
	seed  maphash.Seed

	// The second's lines. spent is read first, without the lock: once a second's lines are
	// all logged, an answer takes no lock but its key's part.
	spent  atomic.Int64 // 1 + the second of the clock whose lines are spent; 0 for none
	mu     sync.Mutex
	second int64 // the second of the clock lines are being counted in
	lines  int   // lines logged in that second

	shards [limiterShards]limiterShard
}

// limiterShard is one part of the memory of who was logged, alone on its cache lines.
type limiterShard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte
}

type shardState struct {
	mu     sync.Mutex
	second int64           // the second of the clock this part last forgot in
	logged map[uint64]seen // hash of the key → when it was last logged
	// suppressed counts lines held back for keys this part does not remember, since the last
	// line logged from any part: that line takes them all.
	suppressed atomic.Uint64
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
	l := &logLimiter{interval: interval, limit: limit, clock: func() time.Duration { return time.Since(start) },
		seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].logged = map[uint64]seen{}
	}
	return l
}

// allow reports whether a line for key may be logged now, with what was held back before
// it; if it may not, it says why. Keys are remembered by a 64-bit hash, with a seed of this
// process: a small map of fixed-size entries keeps the query path's memory reads few, and two
// keys that collide among at most maxRemembered would only share one line's repeat count.
func (l *logLimiter) allow(key []byte) (ok bool, held heldBack, reason string) {
	h := maphash.Bytes(l.seed, key)
	now := l.clock()
	s := int64(now / time.Second)
	sh := &l.shards[h%limiterShards]
	sh.mu.Lock()
	if s > sh.second { // an answer that read the clock before another may come after it
		sh.second = s
		sh.forget(now, l.interval)
	}
	last, known := sh.logged[h]
	if known && now-last.at < l.interval {
		last.repeats++
		sh.logged[h] = last
		sh.mu.Unlock()
		return false, heldBack{}, reasonRepeat
	}
	if !l.take(s) {
		if known {
			last.repeats++
			sh.logged[h] = last
		} else {
			sh.suppressed.Add(1)
		}
		sh.mu.Unlock()
		return false, heldBack{}, reasonLimit
	}
	if known {
		held.repeats = last.repeats
	} else if len(sh.logged) >= rememberedPerShard {
		sh.forgetAll()
	}
	sh.logged[h] = seen{at: now}
	sh.mu.Unlock()
	held.suppressed = l.takeSuppressed()
	return true, held, ""
}

// take takes one of second s's lines, if any is left. A second whose lines are spent is told
// without the lock.
func (l *logLimiter) take(s int64) bool {
	if l.spent.Load() == s+1 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s > l.second { // a late answer of an earlier second counts in the current one
		l.second, l.lines = s, 0
	}
	if l.lines >= l.limit {
		l.spent.Store(l.second + 1)
		return false
	}
	if l.lines++; l.lines >= l.limit {
		l.spent.Store(l.second + 1)
	}
	return true
}

// takeSuppressed collects what every part held back for keys it does not remember, for the
// line about to be logged. A line held back meanwhile goes to this line or the next.
func (l *logLimiter) takeSuppressed() uint64 {
	var n uint64
	for i := range l.shards {
		n += l.shards[i].suppressed.Swap(0)
	}
	return n
}

// forget drops keys whose interval has passed, unless they hold repeats for the client's
// next line. It runs at most once a second in each part.
func (sh *limiterShard) forget(now, interval time.Duration) {
	for k, s := range sh.logged {
		if s.repeats == 0 && now-s.at >= interval {
			delete(sh.logged, k)
		}
	}
}

// forgetAll starts the part's memory afresh. The repeats it held are told as suppressed by
// the line about to be logged: no answer may drop out of every line's count.
func (sh *limiterShard) forgetAll() {
	for _, s := range sh.logged {
		sh.suppressed.Add(s.repeats)
	}
	clear(sh.logged)
}

// remembered is how many keys the limiter holds.
func (l *logLimiter) remembered() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.logged)
		sh.mu.Unlock()
	}
	return n
}
