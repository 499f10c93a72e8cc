package nsguard

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The limiter's memory is bounded whatever the settings: a million distinct clients and
// questions in one second, with a log_limit that lets every line through, hold no more
// than maxRemembered keys.
func TestLogLimiterMemoryBound(t *testing.T) {
	l := newLogLimiter(time.Hour, 1_000_000)
	now := time.Unix(1_700_000_000, 0)
	l.clock = clockAt(&now)
	before := liveHeap()
	key := make([]byte, 0, 275) // as long as a key gets: an IPv6 address and a 255-octet name
	for i := range 1_000_000 {
		key = binary.BigEndian.AppendUint64(key[:0], uint64(i))
		key = append(key, make([]byte, 267)...)
		if ok, _, _ := l.allow(key); !ok {
			t.Fatalf("line %d held back under a log_limit of a million", i)
		}
	}
	grew := liveHeap() - before
	runtime.KeepAlive(l)
	if len(l.logged) > maxRemembered {
		t.Errorf("the limiter holds %d keys, more than %d", len(l.logged), maxRemembered)
	}
	t.Logf("a million keys of 275 octets: %d held, heap grew by %.1f MB", len(l.logged), float64(grew)/(1<<20))
	if grew > 2<<20 {
		t.Errorf("heap grew by %.1f MB, want under 2 MB", float64(grew)/(1<<20))
	}
}

// Repeats held back by log_interval are reported on the client's next line, and a line
// reports what the per-second limit held back since the line before.
func TestLogLimiterCounts(t *testing.T) {
	l := newLogLimiter(time.Minute, 2)
	now := time.Unix(1_700_000_000, 0)
	l.clock = clockAt(&now)
	allow := func(key string) (bool, heldBack) {
		ok, held, _ := l.allow([]byte(key))
		return ok, held
	}
	tests := []struct {
		advance time.Duration
		key     string
		ok      bool
		held    heldBack
	}{
		{0, "a", true, heldBack{}},
		{0, "a", false, heldBack{}},
		{0, "a", false, heldBack{}},
		{0, "b", true, heldBack{}},  // a's repeats wait for a's next line
		{0, "c", false, heldBack{}}, // over the limit of 2 a second, and new: suppressed
		{time.Second, "c", true, heldBack{suppressed: 1}},
		{0, "d", true, heldBack{}},
		{time.Minute - time.Second, "a", true, heldBack{repeats: 2}},
		{0, "a", false, heldBack{}},
		{0, "b", true, heldBack{}},
		{time.Second, "a", false, heldBack{}}, // a repeat: a is remembered past its interval
		{time.Minute, "c", true, heldBack{}},
		{0, "d", true, heldBack{}},
		{0, "a", false, heldBack{}}, // over the limit, but a was logged before: one more repeat
		{time.Second, "a", true, heldBack{repeats: 3}},
	}
	for i, tc := range tests {
		now = now.Add(tc.advance)
		if ok, held := allow(tc.key); ok != tc.ok || held != tc.held {
			t.Errorf("step %d (%s): allow = %v, %+v; want %v, %+v", i, tc.key, ok, held, tc.ok, tc.held)
		}
	}
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// No answer drops out of the counts when the limiter forgets: a client logged once, with 5
// repeats held, then 10,000 other keys at 10 a second. At the default interval the others
// are forgotten as they age; with a long one the memory fills and starts afresh, and the 5
// repeats are told as suppressed by the line that made room. Either way the lines count
// every answer.
func TestLogLimiterForgetsNoCount(t *testing.T) {
	tests := []struct {
		interval time.Duration
		next     heldBack // on the client's next line
	}{
		{time.Minute, heldBack{repeats: 5}},
		{time.Hour, heldBack{}},
	}
	for _, tc := range tests {
		t.Run(tc.interval.String(), func(t *testing.T) {
			l := newLogLimiter(tc.interval, 10)
			now := time.Unix(1_700_000_000, 0)
			l.clock = clockAt(&now)
			var answers, counted uint64
			allow := func(key []byte) (bool, heldBack) {
				answers++
				ok, held, _ := l.allow(key)
				if ok {
					counted += 1 + held.repeats + held.suppressed
				}
				return ok, held
			}
			for range 6 {
				allow([]byte("client"))
			}
			key := make([]byte, 8)
			for i := range maxRemembered {
				if i%10 == 0 {
					now = now.Add(time.Second)
				}
				binary.BigEndian.PutUint64(key, uint64(i))
				allow(key)
			}
			now = now.Add(tc.interval)
			if ok, held := allow([]byte("client")); !ok || held != tc.next {
				t.Errorf("the client's next line: %v %+v, want %+v", ok, held, tc.next)
			}
			if counted != answers {
				t.Errorf("the lines count %d answers of %d", counted, answers)
			}
		})
	}
}

// clockAt is a limiter clock that reads *now, started at its value when made.
func clockAt(now *time.Time) func() time.Duration {
	start := *now
	return func() time.Duration { return now.Sub(start) }
}

// Answers from several CPUs at once, over seconds whose lines are spent and seconds whose are
// not: every answer is counted once, by a line, as its key's repeat or as suppressed, or is
// still waiting in the limiter for the next line; and no second logs more than the limit,
// though the CPUs read the clock in one order and take the lock in another.
func TestLogLimiterCountsEveryAnswerAtOnce(t *testing.T) {
	l := newLogLimiter(time.Second, 3)
	var clock atomic.Int64
	l.clock = func() time.Duration { return time.Duration(clock.Load()) }
	const workers, calls = 4, 20000
	var counted, lines atomic.Uint64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			key := make([]byte, 8)
			for i := range calls {
				if w == 0 && i%500 == 0 {
					clock.Add(int64(100 * time.Millisecond))
				}
				binary.BigEndian.PutUint64(key, uint64((i*7+w)%200))
				if ok, held, _ := l.allow(key); ok {
					lines.Add(1)
					counted.Add(1 + held.repeats + held.suppressed)
				}
			}
		})
	}
	wg.Wait()
	waiting := l.suppressed
	for _, s := range l.logged {
		waiting += s.repeats
	}
	if got := counted.Load() + waiting; got != workers*calls {
		t.Errorf("lines count %d answers and %d wait, %d in all; want %d", counted.Load(), waiting, got, workers*calls)
	}
	// 4 s of the clock at 3 lines a second, and one more second begun.
	if n := lines.Load(); n > 3*(4+1) {
		t.Errorf("%d lines logged, more than the limit lets through", n)
	}
}
