package main

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// resamples is how many times the rounds are drawn again to bound a median: enough for the
// 2.5th and 97.5th percentiles to settle at three decimals.
const resamples = 4000

// floorTable reads rounds.csv files written side by side and sets each configuration beside
// the any floor: the median of its per-run ratios of CPU per query, a 95% confidence interval
// of that median, and in how many runs it used more CPU per query than any beside it. A batch
// median moves by more than its interquartile range suggests; pooling batches and counting
// runs says whether a configuration can be told from the floor at all. kubernetes alone is
// the yardstick: nothing is in front of it.
func floorTable(paths []string) (string, error) {
	ratios := map[string][]float64{}
	for _, p := range paths {
		if err := readRatios(p, ratios); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | runs | CPU/query ratio to any (median, p25–p75) | 95%% CI of the median | runs above any |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|\n")
	rng := rand.New(rand.NewPCG(1, 2)) // the same figures from the same files
	for _, c := range configs {
		v := ratios[c.name]
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
		fmt.Fprintf(&b, "| %s | %d | %.3f (%.3f–%.3f) | %.3f–%.3f | %d of %d |\n", c.name, len(v),
			quantile(v, .5), quantile(v, .25), quantile(v, .75), lo, hi, above, len(v))
	}
	return b.String(), nil
}

// readRatios adds each side-by-side run of path to ratios: the configuration's CPU per query
// over that of any, beside it in the same run.
func readRatios(path string, ratios map[string][]float64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 {
		return fmt.Errorf("%s: empty", path)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, h := range []string{"round", "configuration", "beside", "cpu_us_per_query"} {
		if _, ok := col[h]; !ok {
			return fmt.Errorf("%s: no column %q", path, h)
		}
	}
	type run struct{ round, config string }
	floor := map[run]float64{}
	var rows [][]string
	for _, r := range recs[1:] {
		if r[col["beside"]] == "" {
			return fmt.Errorf("%s: written one after the other; only side-by-side runs have a ratio to any", path)
		}
		if r[col["configuration"]] == configs[floorConfig].name {
			v, err := strconv.ParseFloat(r[col["cpu_us_per_query"]], 64)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			floor[run{r[col["round"]], r[col["beside"]]}] = v
			continue
		}
		rows = append(rows, r)
	}
	for _, r := range rows {
		v, err := strconv.ParseFloat(r[col["cpu_us_per_query"]], 64)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		name := r[col["configuration"]]
		f, ok := floor[run{r[col["round"]], name}]
		if !ok || f == 0 {
			return fmt.Errorf("%s: round %s of %s has no run of any beside it", path, r[col["round"]], name)
		}
		ratios[name] = append(ratios[name], v/f)
	}
	return nil
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
