package main

import (
	"context"
	"fmt"
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
// A/B, and abTable shows it as the gap between the sets of either kind. With -floors own, each
// own floor trades with the configuration it runs beside in the same way.
func tradeSlots(cs []config) {
	for i, c := range cs {
		if c.against || c.ownFloor {
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

// abTable sets each nsguard configuration of this build over its twin built from -against's
// revision, in the same round: the ratio of their ratios to any, each beside any in its own
// run. Its median and 95% CI draw sets of processes whole; the rows of sets whose slots were
// as listed and of sets whose slots were traded differ by twice a slot's bias.
func abTable(batches ...[]sample) (string, error) {
	toFloor := make([]map[runKey]float64, len(batches))
	for b, rows := range batches {
		var err error
		if toFloor[b], err = runRatios(rows); err != nil {
			return "", err
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
		bySet, traded := map[processSet][]float64{}, map[processSet]bool{}
		for bi, rows := range batches {
			for _, s := range rows {
				mine, ok := toFloor[bi][runKey{c.twin, s.round}]
				if s.config != a || !ok {
					continue
				}
				k := processSet{bi, s.generation}
				bySet[k], traded[k] = append(bySet[k], mine/toFloor[bi][runKey{a, s.round}]), s.traded
			}
		}
		for _, part := range []struct {
			name string
			keep func(traded bool) bool
		}{
			{"", func(bool) bool { return true }},
			{", slots as listed", func(t bool) bool { return !t }},
			{", slots traded", func(t bool) bool { return t }},
		} {
			kept := map[processSet][]float64{}
			for k, v := range bySet {
				if part.keep(traded[k]) {
					kept[k] = v
				}
			}
			sets := inOrder(kept)
			if len(sets) == 0 {
				continue
			}
			st := describe(rng, sets)
			fmt.Fprintf(&b, "| %s%s | %d | %d | %s | %s | %d of %d |\n", configs[c.twin].name, part.name, len(sets), len(st.all),
				st.median, st.ci, st.below, len(st.all))
		}
	}
	return b.String(), nil
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
