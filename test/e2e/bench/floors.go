package main

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"golang.org/x/sync/errgroup"
)

// withOwnFloors (-floors own) gives each configuration an any of its own to run beside, on
// addresses of their own (.21 on in cs's /24), where the shared floor runs beside every one.
// The shared floor is busy in every pair and each other server idles between its turns, so
// the ratio to it carries that difference: the control, the floor's own Corefile, measured
// 0.97 to 0.98 of it in a closed loop and 1.005 to 1.010 at a fixed rate. An own floor runs
// only in its configuration's pairs and idles as it does. The first configuration (kubernetes
// or the stock Corefile alone) keeps the shared one, which then runs beside it alone.
func withOwnFloors(cs []config) ([]config, error) {
	base, err := netip.ParseAddr(cs[0].ip)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(cs)
	out[floorConfig].ownFloor, out[floorConfig].twin = true, baseConfig
	for i, c := range cs {
		if i == baseConfig || i == floorConfig {
			continue
		}
		if c.against {
			return nil, fmt.Errorf("-floors own with -against: not both; the builds' slots and the floors' would trade at once")
		}
		a := base.As4()
		a[3] = byte(21 + len(out) - len(cs))
		f := cs[floorConfig]
		f.name, f.ip, f.ownFloor, f.twin = ownFloorPrefix+c.name, netip.AddrFrom4(a).String(), true, i
		out = append(out, f)
	}
	return out, nil
}

// ownFloorPrefix begins the name of an own floor, before the name of its configuration.
const ownFloorPrefix = "any beside "

// floorOf is the index of the any that configuration i runs beside: its own, or the shared
// floor.
func floorOf(i int) int {
	for j, c := range configs {
		if c.ownFloor && c.twin == i {
			return j
		}
	}
	return floorConfig
}

// isFloor reports whether configuration i is an any that others run beside.
func isFloor(i int) bool { return i == floorConfig || configs[i].ownFloor }

// warmBeside warms configuration i just before its measured run. The shared floor runs in
// every pair and stays warm; an own floor idled as long as i did, and is warmed beside it.
func warmBeside(ctx context.Context, b batch, i, floor int) error {
	ips := []string{configs[i].ip}
	if floor != floorConfig {
		ips = append(ips, configs[floor].ip)
	}
	var g errgroup.Group
	for _, ip := range ips {
		g.Go(func() error {
			_, err := dnsperf(ctx, b.loads, ip, *warm)
			return err
		})
	}
	return g.Wait()
}
