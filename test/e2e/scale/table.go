package scale

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Table is the results as Markdown, each configuration beside results[0] (kubernetes alone):
// peak resident memory through the sync and the relist, and the Go heap after the sync.
func Table(results []Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | peak RSS (VmHWM, sync + relist) | vs `kubernetes` alone | peak through sync | peak through relist | RSS after sync | Go heap in use after sync | vs alone | sync time | relist observed | CoreDNS's watches after sync |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for i, r := range results {
		base := results[0]
		vsPeak, vsHeap := "—", "—"
		if i > 0 {
			vsPeak = delta(float64(r.Peak()), float64(base.Peak()))
			vsHeap = delta(r.HeapInuse, base.HeapInuse)
		}
		observed := "no"
		if r.Relist.Observed {
			observed = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %v | %s | %s |\n", r.Config,
			MiB(float64(r.Peak())), vsPeak, MiB(float64(r.PeakSync)), MiB(float64(r.PeakRelist)), MiB(float64(r.RSSSync)),
			MiB(r.HeapInuse), vsHeap, r.SyncTime.Round(100*time.Millisecond), observed, r.Watches)
	}
	return b.String()
}

// delta is "+165.2 MiB (+65.2%)".
func delta(v, base float64) string {
	return fmt.Sprintf("%+.1f MiB (%+.1f%%)", (v-base)/(1<<20), 100*(v-base)/base)
}

// Raw is every figure of every result, one "configuration: key value" line each, with bytes
// as bytes, for bin/bench-scale.txt.
func Raw(results []Result) string {
	var b strings.Builder
	for _, r := range results {
		p := func(k string, v any) { fmt.Fprintf(&b, "%s\t%s\t%v\n", r.Config, k, v) }
		p("peak_rss_bytes", r.Peak())
		p("peak_rss_sync_bytes", r.PeakSync)
		p("peak_rss_relist_bytes", r.PeakRelist)
		p("rss_after_sync_bytes", r.RSSSync)
		p("rss_after_relist_bytes", r.RSSRelist)
		p("rss_anon_after_sync_bytes", r.AnonSync)
		p("rss_file_after_sync_bytes", r.FileSync)
		p("rss_anon_after_relist_bytes", r.AnonRelist)
		p("heap_inuse_after_sync_bytes", int64(r.HeapInuse))
		p("heap_alloc_after_sync_bytes", int64(r.HeapAlloc))
		p("heap_inuse_after_relist_bytes", int64(r.HeapRelist))
		p("heap_inuse_max_sampled_bytes", int64(r.MaxHeap))
		if r.MemoryLimit > 0 {
			p("memory_limit_bytes", r.MemoryLimit)
			p("gomemlimit_bytes", r.GoMemLimit)
			p("peak_under_limit", r.UnderLimit())
		}
		if r.GCSync.Cycles+r.GCRelist.Cycles > 0 {
			p("gc_sync", r.GCSync)
			p("gc_relist", r.GCRelist)
		}
		p("sync_seconds", r.SyncTime.Seconds())
		p("churn_seconds", r.ChurnTime.Seconds())
		p("apiserver_restart_seconds", r.RestartTime.Seconds())
		p("relist_seconds", r.RelistTime.Seconds())
		p("relist_observed", r.Relist.Observed)
		p("relist_old_resource_version", r.Relist.OldRV)
		p("relist_refused", r.Relist.Refused)
		p("relist_full_state_requests", r.Relist.Requests)
		p("relist_resumed_watches", r.Relist.Resumed)
		p("relist_probes", r.Relist.Probes)
		p("relist_missing", strings.Join(r.Relist.Missing, ", "))
		for _, l := range r.Relist.Sequence {
			p("relist_sequence", l)
		}
		p("sync_full_state_requests", r.SyncLists)
		p("watches_after_sync", r.Watches)
		for _, m := range r.ViewMetrics {
			p("metric", m)
		}
		for _, l := range r.Relist.Log {
			p("log", l)
		}
	}
	return b.String()
}

// Summary is several rounds' results as Markdown: per configuration the median peak and
// its range, and the median of each round's ratio to kubernetes alone in that round, so that
// a slow round moves every configuration alike. rounds[k][i] is names[i]'s result in round k,
// names[0] is kubernetes alone, and a run that broke has an empty Config.
func Summary(names []string, rounds [][]Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | rounds | peak RSS, median (min–max) | peak vs alone in the same round, median (min–max) | peak through sync, median | peak through relist, median | Go heap after sync, median |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|\n")
	for i, name := range names {
		var peak, ratio, sync, relist, heap []float64
		for _, round := range rounds {
			r := round[i]
			if r.Config == "" {
				continue
			}
			peak = append(peak, float64(r.Peak()))
			if round[0].Config != "" {
				ratio = append(ratio, float64(r.Peak())/float64(round[0].Peak()))
			}
			sync, relist, heap = append(sync, float64(r.PeakSync)), append(relist, float64(r.PeakRelist)), append(heap, r.HeapInuse)
		}
		if len(peak) == 0 {
			fmt.Fprintf(&b, "| %s | 0 | | | | | |\n", name)
			continue
		}
		vs := "—"
		if i > 0 && len(ratio) > 0 {
			vs = fmt.Sprintf("%+.1f%% (%+.1f%% to %+.1f%%)", 100*(median(ratio)-1), 100*(slices.Min(ratio)-1), 100*(slices.Max(ratio)-1))
		}
		fmt.Fprintf(&b, "| %s | %d | %s (%s–%s) | %s | %s | %s | %s |\n", name, len(peak),
			MiB(median(peak)), MiB(slices.Min(peak)), MiB(slices.Max(peak)), vs, MiB(median(sync)), MiB(median(relist)), MiB(median(heap)))
	}
	return b.String()
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Limits is, for each round, every configuration's peak beside the memory limit it ran under
// and beside kubernetes alone in that round: what the README's sizing rule must hold to.
// rounds[k][i] is names[i]'s result in round k, names[0] kubernetes alone.
func Limits(names []string, rounds [][]Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| round | configuration | memory limit | GOMEMLIMIT | peak RSS | under the limit | vs `kubernetes` alone | most marked live (relist) |\n")
	fmt.Fprintf(&b, "|---:|---|---:|---:|---:|---|---:|---:|\n")
	for k, round := range rounds {
		for i, r := range round {
			if r.Config == "" {
				fmt.Fprintf(&b, "| %d | %s | | | broken | | | |\n", k+1, names[i])
				continue
			}
			vs := "—"
			if i > 0 && round[0].Config != "" {
				vs = fmt.Sprintf("%+.1f%%", 100*(float64(r.Peak())/float64(round[0].Peak())-1))
			}
			limit, gomem, under := "none", "none", "—"
			if r.MemoryLimit > 0 {
				limit, gomem, under = MiB(float64(r.MemoryLimit)), MiB(float64(r.GoMemLimit)), map[bool]string{true: "yes", false: "**no**"}[r.UnderLimit()]
			}
			live := "—"
			if r.GCRelist.Cycles > 0 {
				live = fmt.Sprintf("%.0f MiB", r.GCRelist.MaxLive)
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", k+1, r.Config, limit, gomem, MiB(float64(r.Peak())), under, vs, live)
		}
	}
	return b.String()
}
