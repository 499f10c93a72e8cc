package coredns

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ViewSynced reports whether a /metrics page shows nsguard's cluster view synced.
func ViewSynced(page string) bool {
	for _, s := range Samples(page, "coredns_nsguard_view_synced") {
		if s.Value == 1 {
			return true
		}
	}
	return false
}

// WaitViewSynced waits up to 30 s for nsguard's cluster view to sync.
func (s *Server) WaitViewSynced(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if page, err := s.Scrape(); err == nil && ViewSynced(page) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nsguard's cluster view did not sync in 30s:\n%s", s.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Sample is one sample of a /metrics page: its labels and its value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

var labelPair = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// Samples returns the samples of metric name on a /metrics page, in page order.
func Samples(page, name string) []Sample {
	line := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(?:\{([^}]*)\})? (\S+)$`)
	var out []Sample
	for _, m := range line.FindAllStringSubmatch(page, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue // not a sample line of this text format
		}
		s := Sample{Labels: map[string]string{}, Value: v}
		for _, l := range labelPair.FindAllStringSubmatch(m[1], -1) {
			s.Labels[l[1]] = l[2]
		}
		out = append(out, s)
	}
	return out
}

// Sum adds up the samples of name whose labels hold every "key=value" in match.
func Sum(page, name string, match ...string) float64 {
	var total float64
next:
	for _, s := range Samples(page, name) {
		for _, kv := range match {
			k, v, _ := strings.Cut(kv, "=")
			if s.Labels[k] != v {
				continue next
			}
		}
		total += s.Value
	}
	return total
}

// SumBy adds up the samples of name by the values of the labels keys, joined with "/".
func SumBy(page, name string, keys ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range Samples(page, name) {
		vals := make([]string, len(keys))
		for i, k := range keys {
			vals[i] = s.Labels[k]
		}
		out[strings.Join(vals, "/")] += s.Value
	}
	return out
}
