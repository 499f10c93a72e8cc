package coredns

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"
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
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		page, err := s.Scrape()
		return err == nil && ViewSynced(page), nil
	})
	if err != nil {
		return fmt.Errorf("nsguard's cluster view did not sync in 30s:\n%s", s.Log())
	}
	return nil
}

// Sample is one sample of a /metrics page: its labels and its value.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Samples returns the samples of counter, gauge or untyped metric name on a /metrics
// page, in page order; none when the page does not parse.
func Samples(page, name string) []Sample {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		return nil
	}
	var out []Sample
	for _, m := range families[name].GetMetric() {
		s := Sample{Labels: map[string]string{}}
		for _, l := range m.GetLabel() {
			s.Labels[l.GetName()] = l.GetValue()
		}
		switch {
		case m.Counter != nil:
			s.Value = m.GetCounter().GetValue()
		case m.Gauge != nil:
			s.Value = m.GetGauge().GetValue()
		case m.Untyped != nil:
			s.Value = m.GetUntyped().GetValue()
		default:
			continue // a histogram or summary: no one value
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
