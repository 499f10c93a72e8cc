package main

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
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
//
// Runs of the same processes share a bias for those processes' life (where their memory
// landed, the stack size their goroutines start with): the interval draws each set of
// processes whole, with all its runs, so that it is as wide as the sets disagree.
func floorTable(batches ...[]sample) (string, error) {
	ratios := make([]map[processSet][]float64, len(configs))
	for i := range ratios {
		ratios[i] = map[processSet][]float64{}
	}
	for b, rows := range batches {
		if err := floorRatios(b, rows, ratios); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | runs | sets of processes | CPU/query ratio to any (median, p25–p75) | 95%% CI of the median, each set of processes drawn whole | medians of the sets (lowest–highest) | runs above any |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|\n")
	rng := rand.New(rand.NewPCG(1, 2)) // the same figures from the same files
	for i, bySet := range ratios {
		if len(bySet) == 0 {
			continue
		}
		sets := inOrder(bySet)
		var setMedians []float64
		for _, set := range sets {
			setMedians = append(setMedians, quantile(set, .5))
		}
		st := describe(rng, sets)
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %.3f–%.3f | %d of %d |\n", configs[i].name, len(st.all), len(sets),
			st.median, st.ci, slices.Min(setMedians), slices.Max(setMedians), st.above, len(st.all))
	}
	return b.String(), nil
}

// inOrder is the sets of bySet, in the order of their processSet.
func inOrder(bySet map[processSet][]float64) [][]float64 {
	var sets [][]float64
	for _, k := range slices.SortedFunc(maps.Keys(bySet), processSet.compare) {
		sets = append(sets, bySet[k])
	}
	return sets
}

// setStats is what a table row says of the ratios of some sets of processes.
type setStats struct {
	all          []float64
	median       string // "median (p25–p75)"
	ci           string // the 95% CI of the median, each set drawn whole
	above, below int    // ratios above 1, and below
}

// describe gives the statistics of sets of ratios, each set one set of processes.
func describe(rng *rand.Rand, sets [][]float64) setStats {
	all := slices.Concat(sets...)
	st := setStats{all: all, ci: "none: one set"} // its runs share one bias, which no draw of them can show
	st.median = fmt.Sprintf("%.3f (%.3f–%.3f)", quantile(all, .5), quantile(all, .25), quantile(all, .75))
	if len(sets) > 1 {
		lo, hi := medianCI(rng, sets)
		st.ci = fmt.Sprintf("%.3f–%.3f", lo, hi)
	}
	for _, x := range all {
		switch {
		case x > 1:
			st.above++
		case x < 1:
			st.below++
		}
	}
	return st
}

// processSet names the servers of one batch between two restarts (-restart).
type processSet struct{ batch, generation int }

func (a processSet) compare(b processSet) int {
	return cmp.Or(cmp.Compare(a.batch, b.batch), cmp.Compare(a.generation, b.generation))
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
	t, err := floorTable(batches...)
	if err != nil || *against == "" {
		return t, err
	}
	ab, err := abTable(batches...)
	return t + "\n" + ab, err
}

// floorRatios adds each side-by-side run of batch b to ratios, by configuration and set of
// processes: its CPU per query over that of any, beside it in the same run.
func floorRatios(b int, rows []sample, ratios []map[processSet][]float64) error {
	toFloor, err := runRatios(rows)
	if err != nil {
		return err
	}
	for _, s := range rows {
		if !isFloor(s.config) {
			k := processSet{b, s.generation}
			ratios[s.config][k] = append(ratios[s.config][k], toFloor[runKey{s.config, s.round}])
		}
	}
	return nil
}

// runKey is one configuration's run in one round; side by side, any runs beside it.
type runKey struct{ config, round int }

// runRatios is, of each side-by-side run of rows but any's, its CPU per query over that of
// any beside it in the same run.
func runRatios(rows []sample) (map[runKey]float64, error) {
	floor := map[runKey]float64{} // by the configuration beside it
	for _, s := range rows {
		if s.pair < 0 {
			return nil, fmt.Errorf("%s, round %d: run one after the other; only side-by-side runs have a ratio to any", configs[s.config].name, s.round)
		}
		if isFloor(s.config) {
			if f := floorOf(s.pair); s.config != f {
				return nil, fmt.Errorf("round %d of %s ran beside %s, not %s: runs with the shared floor and with own floors (-floors) do not pool", s.round, configs[s.pair].name, configs[s.config].name, configs[f].name)
			}
			floor[runKey{s.pair, s.round}] = s.cpuPerQuery()
		}
	}
	out := map[runKey]float64{}
	for _, s := range rows {
		if isFloor(s.config) {
			continue
		}
		f, ok := floor[runKey{s.pair, s.round}]
		if !ok || f == 0 {
			return nil, fmt.Errorf("round %d of %s has no run of any beside it", s.round, configs[s.config].name)
		}
		out[runKey{s.config, s.round}] = s.cpuPerQuery() / f
	}
	return out, nil
}

// readRounds reads back what writeCSV wrote: of each run, what floorRatios needs, and the
// file's -qps. A file written before it had the column reads as a closed loop (-qps 0): it
// cannot tell the few runs at a rate made before then, so they must not be given to -pool.
// A file written before the generation column counts each round as a set of processes of its
// own, as the interval then did.
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
	gen, hasGen := col["generation"]
	traded, hasTraded := col["slots_traded"]
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
			if *floors != "own" && (strings.HasPrefix(r[col["configuration"]], ownFloorPrefix) || strings.HasPrefix(r[col["beside"]], ownFloorPrefix)) {
				return nil, 0, fmt.Errorf("%s:%d: a run with own floors: pool it with -floors own", path, line+2)
			}
			return nil, 0, fmt.Errorf("%s:%d: not a run of this bench: %q", path, line+2, r)
		}
		s.round, s.config, s.completed, s.cpu = round, config, completed, time.Duration(cpu)*time.Microsecond
		s.generation = round
		if hasGen {
			if s.generation, err = strconv.Atoi(r[gen]); err != nil {
				return nil, 0, fmt.Errorf("%s:%d: generation %q: %w", path, line+2, r[gen], err)
			}
		}
		if hasTraded {
			if s.traded, err = strconv.ParseBool(r[traded]); err != nil {
				return nil, 0, fmt.Errorf("%s:%d: slots_traded %q: %w", path, line+2, r[traded], err)
			}
		}
		switch {
		case beside < 0: // one after the other
		case isFloor(config):
			s.pair = beside
		default:
			s.pair = config
		}
		rows = append(rows, s)
	}
	return rows, qps, nil
}

// medianCI is a 95% bootstrap confidence interval of the median of the values of sets, each
// draw taking as many sets as there are, with replacement, and all the values of each.
func medianCI(rng *rand.Rand, sets [][]float64) (lo, hi float64) {
	meds := make([]float64, resamples)
	var draw []float64
	for i := range meds {
		draw = draw[:0]
		for range sets {
			draw = append(draw, sets[rng.IntN(len(sets))]...)
		}
		meds[i] = quantile(draw, .5)
	}
	return quantile(meds, .025), quantile(meds, .975)
}
