package scale

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/procfs"
)

// Mem is what /proc/PID/status says of a process's resident memory, in bytes.
type Mem struct {
	HWM  uint64 // VmHWM: the peak resident set since start, or since ResetPeak
	RSS  uint64 // VmRSS: the resident set now, RssAnon + RssFile + RssShmem
	Anon uint64 // RssAnon: the heap, stacks and the runtime's own; what a relist grows
	File uint64 // RssFile: the binary's pages in memory, which reclaim can drop
}

// ReadMem reads pid's VmHWM, VmRSS, RssAnon and RssFile.
func ReadMem(pid int) (Mem, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return Mem{}, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return Mem{}, err
	}
	if st.VmHWM == 0 { // a zombie's status has no memory lines
		return Mem{}, fmt.Errorf("/proc/%d/status: no VmHWM", pid)
	}
	return Mem{HWM: st.VmHWM, RSS: st.VmRSS, Anon: st.RssAnon, File: st.RssFile}, nil
}

// ResetPeak sets pid's VmHWM to its VmRSS now (writing 5 to /proc/PID/clear_refs), so that the
// next reading is the peak of what follows.
func ResetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// Sampler polls a process's VmRSS and another gauge (such as the Go heap in use, from
// /metrics) and keeps the highest of each. VmHWM is the kernel's own peak; the sampler shows
// when it was reached.
type Sampler struct {
	mu                sync.Mutex
	maxRSS, maxGauge  float64
	atMaxRSS, atGauge time.Duration
	start             time.Time
	stop              chan struct{}
	done              chan struct{}
}

// StartSampler samples pid's VmRSS every rssEvery, and gauge (nil for none) every gaugeEvery,
// until Stop.
func StartSampler(pid int, rssEvery time.Duration, gauge func() (float64, error), gaugeEvery time.Duration) *Sampler {
	s := &Sampler{start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		rss, g := time.NewTicker(rssEvery), time.NewTicker(gaugeEvery)
		defer rss.Stop()
		defer g.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-rss.C:
				if m, err := ReadMem(pid); err == nil {
					s.note(&s.maxRSS, &s.atMaxRSS, float64(m.RSS))
				}
			case <-g.C:
				if gauge == nil {
					continue
				}
				if v, err := gauge(); err == nil {
					s.note(&s.maxGauge, &s.atGauge, v)
				}
			}
		}
	}()
	return s
}

func (s *Sampler) note(max *float64, at *time.Duration, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v > *max {
		*max, *at = v, time.Since(s.start)
	}
}

// Stop ends the sampling and returns the highest VmRSS and gauge seen, and when (since the
// sampler started).
func (s *Sampler) Stop() (maxRSS float64, atRSS time.Duration, maxGauge float64, atGauge time.Duration) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxRSS, s.atMaxRSS, s.maxGauge, s.atGauge
}
