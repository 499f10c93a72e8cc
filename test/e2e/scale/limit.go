package scale

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// MemoryLimit is the README's rule for CoreDNS's memory limit with nsguard, in bytes, rounded
// up to a MiB: 64 MiB and 18 KiB per Service for CoreDNS through a relist of realistic
// Services and EndpointSlices, and 1 MiB per 400 Pods for nsguard.
func MemoryLimit(s Size) uint64 {
	mib := 64 + float64(s.Services())*18/1024 + float64(s.Pods())/400
	return uint64(math.Ceil(mib)) << 20
}

// GoMemLimit is the GOMEMLIMIT deploy/ sets for a memory limit: 90% of it, so that the Go
// collector works harder before the container reaches its limit, and what the Go runtime
// does not count (the binary's pages, C stacks) fits in the rest.
func GoMemLimit(limit uint64) uint64 { return limit / 10 * 9 }

// processEnv is what every CoreDNS of env runs with.
func (env Env) processEnv() []string {
	var out []string
	if env.MemoryLimit > 0 {
		out = append(out, "GOMEMLIMIT="+strconv.FormatUint(GoMemLimit(env.MemoryLimit), 10))
	}
	if env.GCTrace {
		out = append(out, "GODEBUG=gctrace=1")
	}
	return out
}

// gcLine is one line of GODEBUG=gctrace=1: the heap at the cycle's start, end, and what it
// marked live, in MiB.
var gcLine = regexp.MustCompile(`^gc \d+ @[0-9.]+s .*: (\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)

// GCTrace is what the collector's lines in a log say.
type GCTrace struct {
	Cycles  int
	MaxLive float64 // the most any cycle marked live, MiB
	MaxHeap float64 // the largest heap any cycle started or ended with, MiB
}

func (g GCTrace) String() string {
	if g.Cycles == 0 {
		return "no collector lines"
	}
	return fmt.Sprintf("%d cycles, at most %.0f MiB marked live, heap at most %.0f MiB", g.Cycles, g.MaxLive, g.MaxHeap)
}

// ReadGCTrace reads the collector's lines of log.
func ReadGCTrace(log string) GCTrace {
	var g GCTrace
	for _, l := range strings.Split(log, "\n") {
		m := gcLine.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		g.Cycles++
		start, _ := strconv.ParseFloat(m[1], 64)
		end, _ := strconv.ParseFloat(m[2], 64)
		live, _ := strconv.ParseFloat(m[3], 64)
		g.MaxLive = max(g.MaxLive, live)
		g.MaxHeap = max(g.MaxHeap, start, end)
	}
	return g
}
