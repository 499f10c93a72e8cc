// Command loadlookup resolves names without pause, as a busy client Pod does, with Go's own
// resolver and the Pod's /etc/resolv.conf, and prints a line each second:
//
//	t=2026-12-07T05:30:01Z ok=50 failed=0 total_ok=3000 total_failed=0
//
// and the error of each failed lookup on a line of its own, so that kubectl logs tells
// every failure and when it happened.
//
// Usage: loadlookup -rate 50 NAME...
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"
)

func main() {
	rate := flag.Int("rate", 50, "lookups a second, spread over the names in turn")
	flag.Parse()
	names := flag.Args()
	if len(names) == 0 || *rate < 1 {
		fmt.Fprintln(os.Stderr, "usage: loadlookup -rate N NAME...")
		os.Exit(1)
	}
	r := &net.Resolver{PreferGo: true}
	var ok, failed, totalOK, totalFailed atomic.Int64
	go func() {
		for range time.Tick(time.Second) {
			o, f := ok.Swap(0), failed.Swap(0)
			fmt.Printf("t=%s ok=%d failed=%d total_ok=%d total_failed=%d\n",
				time.Now().UTC().Format(time.RFC3339), o, f, totalOK.Load(), totalFailed.Load())
		}
	}()
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	for i := 0; ; i++ {
		<-tick.C
		name := names[i%len(names)]
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := r.LookupIP(ctx, "ip", name); err != nil {
				failed.Add(1)
				totalFailed.Add(1)
				fmt.Printf("FAILED t=%s %s: %v\n", time.Now().UTC().Format(time.RFC3339Nano), name, err)
				return
			}
			ok.Add(1)
			totalOK.Add(1)
		}()
	}
}
