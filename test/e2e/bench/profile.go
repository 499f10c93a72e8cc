package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// share is where one configuration's CPU went, from a CPU profile of CoreDNS's pprof plugin
// taken under the mix: the fractions of all samples.
type share struct {
	total       time.Duration
	queries     float64         // answered while the profile ran
	stackGrowth float64         // runtime.newstack: growing and copying query goroutines' stacks
	gc          float64         // the garbage collector's own work
	guard       float64         // nsguard's own functions, outside the plugins after it and the client's write
	view        float64         // of which nsguard's cluster view
	floor       float64         // the any plugin's own function
	parts       [nParts]float64 // nsguard's own functions, by part
}

// part is a piece of nsguard's own time, named by the nsguard function nearest the leaf
// outside clusterdns: the naming model that every piece calls.
type part int

const (
	partQuickLook part = iota // ServeDNS, mayHold, direct: every query pays it
	partName                  // holds: reading a name the quick look let in
	partClient                // remoteIP and the cluster view: who asked
	partCounters              // the held answers' counters
	partLimits                // the log limits, and the lines they let out
	partRefusal               // building a refusal
	partHeld                  // hold, answer, decide, next, and any other: capturing, deciding, writing
	nParts
)

var partNames = [nParts]string{"quick look (every query)", "reading the name", "client and view", "counters", "log limits and lines", "refusal", "capture, decision, write"}

// partOf names the part of nsguard's function fn, a full function name.
func partOf(fn string) part {
	f := strings.TrimPrefix(fn, "github.com/nsguard/nsguard.")
	has := func(names ...string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.Contains(f, n) })
	}
	switch {
	case strings.HasPrefix(f, "github.com/nsguard/nsguard/clusterview."), has("remoteIP", "viewSynced", "clientAllowed"):
		return partClient
	case has("(*NSGuard).ServeDNS", "(*NSGuard).mayHold", "(*NSGuard).direct", "(*NSGuard).Name"):
		return partQuickLook
	case has("(*NSGuard).holds"):
		return partName
	case has("count", "forServer", "forClient", "Counters", "lazyCounter", "readMostly", "counterCache", "suppressedLine"):
		return partCounters
	case has("(*NSGuard).report", "(*NSGuard).logLine", "logLimiter", "limitKey", "records", "Fix", "typedName", "nsguard/logline."):
		return partLimits
	case has("refusal", "setSOA", "replyOPT"):
		return partRefusal
	}
	return partHeld
}

// fetchProfile fetches a CPU profile of seconds from a pprof listener at addr into path.
func fetchProfile(ctx context.Context, addr, path string, seconds int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds), nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof at %s: %s", addr, res.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// attribute reads a profile's samples and sorts their time into shares. A sample counts
// where its stack says: stack growth and GC first, then the plugin frame nearest the leaf.
// nsguard's own time is a stack whose leaf side reaches nsguard before any plugin after it,
// and before the write of the answer to the client, which is the same work whether nsguard
// or the kubernetes plugin does it; the same for any.
func attribute(path string) (share, error) {
	f, err := os.Open(path)
	if err != nil {
		return share{}, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return share{}, fmt.Errorf("%s: %w", path, err)
	}
	cpu := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" && t.Unit == "nanoseconds" })
	if cpu < 0 {
		return share{}, fmt.Errorf("%s is not a CPU profile in nanoseconds", path)
	}
	var s share
	for _, smp := range p.Sample {
		var stack []string
		for _, loc := range smp.Location { // leaf first; within a location, inlined calls first
			for _, l := range loc.Line {
				if l.Function != nil {
					stack = append(stack, l.Function.Name)
				}
			}
		}
		if d := time.Duration(smp.Value[cpu]); d > 0 {
			s.add(d, stack)
		}
	}
	if s.total == 0 {
		return s, fmt.Errorf("%s holds no samples", path)
	}
	t := float64(s.total)
	s.stackGrowth, s.gc, s.guard, s.view, s.floor = s.stackGrowth/t, s.gc/t, s.guard/t, s.view/t, s.floor/t
	for i := range s.parts {
		s.parts[i] /= t
	}
	return s, nil
}

// downstream are the plugins that run after nsguard (and after any) in the bench's chains.
var downstream = []string{"plugin/kubernetes.", "plugin/template.", "plugin/cache."}

func (s *share) add(d time.Duration, stack []string) {
	s.total += d
	v := float64(d)
	in := func(prefix string) bool {
		for _, f := range stack {
			if strings.Contains(f, prefix) {
				return true
			}
		}
		return false
	}
	switch {
	case in("runtime.newstack"):
		s.stackGrowth += v
		return
	case in("runtime.gcBgMarkWorker"), in("runtime.gcAssistAlloc"), in("runtime.bgsweep"), in("runtime.bgscavenge"):
		s.gc += v
		return
	}
	for i, f := range stack { // leaf first
		switch {
		case strings.HasPrefix(f, "github.com/miekg/dns.(*response).Write"), strings.HasSuffix(f, ").WriteMsg"):
			// Sending the answer to the client, through the writers of the plugins in front
			// (prometheus's recorder, loadbalance): whoever writes it, every configuration
			// pays it. A plugin after nsguard writes into nsguard's writer, and is downstream.
			return
		case strings.HasPrefix(f, "github.com/nsguard/nsguard"):
			s.guard += v
			if strings.HasPrefix(f, "github.com/nsguard/nsguard/clusterview.") {
				s.view += v
			}
			s.parts[ownPart(stack[i:])] += v
			return
		case strings.HasPrefix(f, "github.com/coredns/coredns/plugin/any."):
			s.floor += v
			return
		}
		for _, p := range downstream {
			if strings.Contains(f, p) {
				return
			}
		}
	}
}

// ownPart is the part of a stack (leaf first) whose leaf side starts in nsguard: that of its
// first function outside clusterdns, which reads names for every part.
func ownPart(stack []string) part {
	for _, f := range stack {
		if strings.HasPrefix(f, "github.com/nsguard/nsguard") && !strings.HasPrefix(f, "github.com/nsguard/nsguard/clusterdns.") {
			return partOf(f)
		}
	}
	return partName
}

func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 2, 64) + "%" }
