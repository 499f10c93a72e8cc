package main

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// resamples is how many times the rounds are drawn again to bound a median: enough for the
// 2.5th and 97.5th percentiles to settle at three decimals.
const resamples = 4000

// floorTable sets each configuration of side-by-side batches beside the any floor: the median
// of its per-run ratios of CPU per query, a 95% confidence interval of that median, and in
// how many runs it used more CPU per query than any beside it. A batch median moves by more
// than its interquartile range suggests; pooling batches and counting runs says whether a
// configuration can be told from the floor at all. kubernetes alone is the yardstick:
// nothing is in front of it.
func floorTable(batches ...[]sample) (string, error) {
	ratios := make([][]float64, len(configs))
	for _, rows := range batches {
		if err := floorRatios(rows, ratios); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | runs | CPU/query ratio to any (median, p25–p75) | 95%% CI of the median | runs above any |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|\n")
	rng := rand.New(rand.NewPCG(1, 2)) // the same figures from the same files
	for i, v := range ratios {
		if len(v) == 0 {
			continue
		}
		lo, hi := medianCI(rng, v)
		above := 0
		for _, x := range v {
			if x > 1 {
				above++
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %.3f (%.3f–%.3f) | %.3f–%.3f | %d of %d |\n", configs[i].name, len(v),
			quantile(v, .5), quantile(v, .25), quantile(v, .75), lo, hi, above, len(v))
	}
	return b.String(), nil
}

// pooled is floorTable for the rounds.csv files of earlier batches.
// Runs at a fixed rate and closed-loop runs measure different things (see -qps): they do
// not pool.
func pooled(paths []string) (string, error) {
	var batches [][]sample
	var first int
	for i, p := range paths {
		rows, qps, err := readRounds(p)
		if err != nil {
			return "", err
		}
		if i == 0 {
			first = qps
		}
		if qps != first {
			return "", fmt.Errorf("%s ran at -qps %d, %s at -qps %d: runs of different rates do not pool", paths[0], first, p, qps)
		}
		batches = append(batches, rows)
	}
	return floorTable(batches...)
}

// floorRatios adds each side-by-side run of one batch to ratios, by configuration: its CPU per
// query over that of any, beside it in the same run.
func floorRatios(rows []sample, ratios [][]float64) error {
	type run struct{ round, pair int }
	floor := map[run]float64{}
	for _, s := range rows {
		if s.pair < 0 {
			return fmt.Errorf("%s, round %d: run one after the other; only side-by-side runs have a ratio to any", configs[s.config].name, s.round)
		}
		if s.config == floorConfig {
			floor[run{s.round, s.pair}] = s.cpuPerQuery()
		}
	}
	for _, s := range rows {
		if s.config == floorConfig {
			continue
		}
		f, ok := floor[run{s.round, s.pair}]
		if !ok || f == 0 {
			return fmt.Errorf("round %d of %s has no run of any beside it", s.round, configs[s.config].name)
		}
		ratios[s.config] = append(ratios[s.config], s.cpuPerQuery()/f)
	}
	return nil
}

// readRounds reads back what writeCSV wrote: of each run, what floorRatios needs, and the
// file's -qps. A file written before it had the column reads as a closed loop (-qps 0): it
// cannot tell the few runs at a rate made before then, so they must not be given to -pool.
func readRounds(path string) ([]sample, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, 0, fmt.Errorf("%s: empty", path)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"round", "configuration", "beside", "completed", "cpu_us"} {
		if _, ok := col[h]; !ok {
			return nil, 0, fmt.Errorf("%s: no column %q", path, h)
		}
	}
	index := map[string]int{"": -1}
	for i, c := range configs {
		index[c.name] = i
	}
	qps := 0
	limit, hasLimit := col["qps_limit"]
	var rows []sample
	for line, r := range recs[1:] {
		if hasLimit {
			q, err := strconv.Atoi(r[limit])
			if err != nil || line > 0 && q != qps {
				return nil, 0, fmt.Errorf("%s:%d: qps_limit %q: want the file's one -qps", path, line+2, r[limit])
			}
			qps = q
		}
		s := sample{pair: -1}
		config, ok1 := index[r[col["configuration"]]]
		beside, ok2 := index[r[col["beside"]]]
		round, err1 := strconv.Atoi(r[col["round"]])
		completed, err2 := strconv.ParseInt(r[col["completed"]], 10, 64)
		cpu, err3 := strconv.ParseInt(r[col["cpu_us"]], 10, 64)
		if !ok1 || config < 0 || !ok2 || err1 != nil || err2 != nil || err3 != nil {
			return nil, 0, fmt.Errorf("%s:%d: not a run of this bench: %q", path, line+2, r)
		}
		s.round, s.config, s.completed, s.cpu = round, config, completed, time.Duration(cpu)*time.Microsecond
		switch {
		case beside < 0: // one after the other
		case config == floorConfig:
			s.pair = beside
		default:
			s.pair = config
		}
		rows = append(rows, s)
	}
	return rows, qps, nil
}

// medianCI is a 95% bootstrap confidence interval of the median of v.
func medianCI(rng *rand.Rand, v []float64) (lo, hi float64) {
	meds := make([]float64, resamples)
	draw := make([]float64, len(v))
	for i := range meds {
		for j := range draw {
			draw[j] = v[rng.IntN(len(v))]
		}
		meds[i] = quantile(draw, .5)
	}
	return quantile(meds, .025), quantile(meds, .975)
}
