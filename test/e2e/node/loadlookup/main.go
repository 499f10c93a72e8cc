// Command loadlookup resolves names without pause, as a busy client Pod does, with Go's own
// resolver and the Pod's /etc/resolv.conf, and prints a line each second:
//
//	t=2026-12-07T05:30:01Z ok=50 failed=0 slow=0 total_ok=3000 total_failed=0 total_slow=0 max=12ms oldest=2026-12-07T05:30:00.98Z
//
// (max: the longest lookup that ended in the second; oldest: when the oldest lookup still
// waiting began, or "-": a lookup begun before it has ended, answered or failed),
// and each failed lookup on a line of its own, with the resolver's error and when the lookup
// began and ended, so that kubectl logs tells every failure and when it happened; and each
// slow one (an answer after a resolver's retry: a second or more) likewise.
//
// Each lookup is a resolution of its own, as if each came from another client: a fresh
// net.Resolver, because one Resolver joins concurrent lookups of a name into one, and a lost
// reply would fail every lookup that joined it. A lookup is bounded only by the resolver's own
// timeouts and attempts (resolv.conf), as an application's is: one the resolver answers after
// retrying is answered; one it gives up on is failed.
//
// Usage: loadlookup -rate 50 NAME...
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// slow is the latency from which an answer counts as slow: no answer in the same second, so
// the resolver waited and asked again.
const slow = time.Second

func main() {
	rate := flag.Int("rate", 50, "lookups a second, spread over the names in turn")
	flag.Parse()
	names := flag.Args()
	if len(names) == 0 || *rate < 1 {
		fmt.Fprintln(os.Stderr, "usage: loadlookup -rate N NAME...")
		os.Exit(1)
	}
	var ok, failed, slowN, totalOK, totalFailed, totalSlow atomic.Int64
	var mu sync.Mutex
	var maxTook time.Duration
	waiting := map[int]time.Time{} // lookups under way, by number, and when each began
	go func() {
		for range time.Tick(time.Second) {
			o, f, s := ok.Swap(0), failed.Swap(0), slowN.Swap(0)
			mu.Lock()
			m := maxTook
			maxTook = 0
			oldest := "-"
			var first time.Time
			for _, b := range waiting {
				if first.IsZero() || b.Before(first) {
					first = b
				}
			}
			if !first.IsZero() {
				oldest = first.UTC().Format(time.RFC3339Nano)
			}
			mu.Unlock()
			fmt.Printf("t=%s ok=%d failed=%d slow=%d total_ok=%d total_failed=%d total_slow=%d max=%s oldest=%s\n",
				time.Now().UTC().Format(time.RFC3339), o, f, s, totalOK.Load(), totalFailed.Load(), totalSlow.Load(), m.Round(time.Millisecond), oldest)
		}
	}()
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	for i := 0; ; i++ {
		<-tick.C
		name := names[i%len(names)]
		began := time.Now()
		mu.Lock()
		waiting[i] = began
		mu.Unlock()
		go func() {
			// Far past the resolver's own bound (attempts x timeout for each search name): the
			// resolver decides, this only keeps a goroutine from waiting forever.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_, err := (&net.Resolver{PreferGo: true}).LookupIP(ctx, "ip", name)
			took := time.Since(began)
			mu.Lock()
			maxTook = max(maxTook, took)
			delete(waiting, i)
			mu.Unlock()
			if err != nil {
				failed.Add(1)
				totalFailed.Add(1)
				fmt.Printf("FAILED began=%s took=%s %s: %v\n", began.UTC().Format(time.RFC3339Nano), took.Round(time.Millisecond), name, err)
				return
			}
			ok.Add(1)
			totalOK.Add(1)
			if took >= slow {
				slowN.Add(1)
				totalSlow.Add(1)
				fmt.Printf("SLOW began=%s took=%s %s\n", began.UTC().Format(time.RFC3339Nano), took.Round(time.Millisecond), name)
			}
		}()
	}
}
