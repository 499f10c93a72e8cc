package cluster

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// live holds every child not yet reaped, so that an interrupt or the end of
// TestMain can kill them without taking any ControlPlane's lock.
var (
	liveMu     sync.Mutex
	live       = map[*process]struct{}{}
	signalOnce sync.Once
)

func track(p *process) {
	signalOnce.Do(handleSignals)
	liveMu.Lock()
	live[p] = struct{}{}
	liveMu.Unlock()
}

func untrack(p *process) {
	liveMu.Lock()
	delete(live, p)
	liveMu.Unlock()
}

// KillAll kills every child this package started and waits for them.
// ControlPlane.Stop is the normal path; this is the backstop.
func KillAll() {
	liveMu.Lock()
	ps := make([]*process, 0, len(live))
	for p := range live {
		ps = append(ps, p)
	}
	liveMu.Unlock()
	for _, p := range ps {
		p.stop(0)
	}
}

// handleSignals kills the children on SIGINT/SIGTERM, which otherwise would
// not reach them (own process group) and would end the test binary at once.
func handleSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-ch
		KillAll()
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
		time.Sleep(time.Second)
		os.Exit(1)
	}()
}
