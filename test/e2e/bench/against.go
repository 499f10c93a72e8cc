package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// withAgainst adds, after cs, each nsguard configuration again as built from rev, on
// addresses of its own (.11 on in cs's /24): an A/B of two builds inside one run, each
// beside its own any. A change of 1% moves less than two batches do.
func withAgainst(cs []config, rev string) ([]config, error) {
	base, err := netip.ParseAddr(cs[0].ip)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(cs)
	for i, c := range cs {
		if !c.runsNSGuard() {
			continue
		}
		a := base.As4()
		a[3] = byte(11 + len(out) - len(cs))
		c.name, c.ip, c.against, c.twin = c.name+" @"+rev, netip.AddrFrom4(a).String(), true, i
		out = append(out, c)
	}
	return out, nil
}

// tradeSlots gives each configuration built from -against's revision its twin's address, and
// the twin its own: with the address goes the place in the start order (startOrder). The
// same build measured one to four points apart in the two slots, so startAll trades them every
// other set of processes: each build has each slot as often, a slot's bias cancels from the
// A/B, and abTable shows it as the gap between the sets of either kind.
func tradeSlots(cs []config) {
	for i, c := range cs {
		if c.against {
			cs[i].ip, cs[c.twin].ip = cs[c.twin].ip, c.ip
		}
	}
}

// startOrder is the order the configurations start in: by address, so that a slot keeps its
// place whichever build it holds.
func startOrder(cs []config) []int {
	order := make([]int, len(cs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return netip.MustParseAddr(cs[a].ip).Compare(netip.MustParseAddr(cs[b].ip))
	})
	return order
}

// copyBinary copies bin into dir: servers of a file no other server runs share no text
// pages with the floor's, as the -against build's servers do not either.
func copyBinary(bin, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src, err := os.Open(bin)
	if err != nil {
		return "", err
	}
	defer src.Close()
	to := filepath.Join(dir, filepath.Base(bin))
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return "", err
	}
	return to, dst.Close()
}

// abTable sets each nsguard configuration of this build over its twin built from -against's
// revision, in the same round: the ratio of their ratios to any, each beside any in its own
// run. Its median and 95% CI draw sets of processes whole; the rows of sets whose slots were
// as listed and of sets whose slots were traded differ by twice a slot's bias.
func abTable(batches ...[]sample) string {
	type key struct{ config, batch, round int }
	toFloor := map[key]float64{}
	for b, rows := range batches {
		floor := map[[2]int]float64{} // round, pair
		for _, s := range rows {
			if s.config == floorConfig && s.pair >= 0 {
				floor[[2]int{s.round, s.pair}] = s.cpuPerQuery()
			}
		}
		for _, s := range rows {
			if f := floor[[2]int{s.round, s.pair}]; s.config != floorConfig && f > 0 {
				toFloor[key{s.config, b, s.round}] = s.cpuPerQuery() / f
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| this build over the -against build, same round | sets of processes | runs | ratio (median, p25–p75) | 95%% CI of the median, each set drawn whole | runs lower |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|\n")
	rng := rand.New(rand.NewPCG(3, 4))
	for a, c := range configs {
		if !c.against {
			continue
		}
		for _, part := range []struct {
			name string
			keep func(bool) bool
		}{
			{"", func(bool) bool { return true }},
			{", slots as listed", func(t bool) bool { return !t }},
			{", slots traded", func(t bool) bool { return t }},
		} {
			bySet := map[processSet][]float64{}
			for b, rows := range batches {
				for _, s := range rows {
					if s.config != a || !part.keep(s.traded) {
						continue
					}
					mine, ok1 := toFloor[key{c.twin, b, s.round}]
					theirs, ok2 := toFloor[key{a, b, s.round}]
					if ok1 && ok2 {
						k := processSet{b, s.generation}
						bySet[k] = append(bySet[k], mine/theirs)
					}
				}
			}
			var sets [][]float64
			for _, k := range slices.SortedFunc(maps.Keys(bySet), processSet.compare) {
				sets = append(sets, bySet[k])
			}
			all := slices.Concat(sets...)
			if len(all) == 0 {
				continue
			}
			ci := "none: one set"
			if len(sets) > 1 {
				lo, hi := medianCI(rng, sets)
				ci = fmt.Sprintf("%.3f–%.3f", lo, hi)
			}
			lower := 0
			for _, x := range all {
				if x < 1 {
					lower++
				}
			}
			fmt.Fprintf(&b, "| %s%s | %d | %d | %.3f (%.3f–%.3f) | %s | %d of %d |\n", configs[c.twin].name, part.name, len(sets), len(all),
				quantile(all, .5), quantile(all, .25), quantile(all, .75), ci, lower, len(all))
		}
	}
	return b.String()
}

// buildAt builds cmd/coredns as it was at rev, from a worktree of root's repository that it
// removes again.
func buildAt(ctx context.Context, root, out, rev string) (string, error) {
	src := filepath.Join(out, "against-src")
	git := func(args ...string) error {
		if b, err := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	if err := git("worktree", "prune"); err != nil { // one an interrupted run left behind
		return "", err
	}
	if err := git("worktree", "add", "--detach", src, rev); err != nil {
		return "", err
	}
	defer git("worktree", "remove", "--force", src)
	dir := filepath.Join(out, "against")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return coredns.Build(ctx, src, dir)
}
