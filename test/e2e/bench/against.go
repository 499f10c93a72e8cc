package main

import (
	"context"
	"fmt"
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
	for _, c := range cs {
		if !c.runsNSGuard() {
			continue
		}
		a := base.As4()
		a[3] = byte(11 + len(out) - len(cs))
		c.name, c.ip, c.against = c.name+" @"+rev, netip.AddrFrom4(a).String(), true
		out = append(out, c)
	}
	return out, nil
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
