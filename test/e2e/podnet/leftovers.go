package podnet

import (
	"errors"
	"net/netip"
)

// removeLeftovers deletes the veths, namespaces and lo addresses that processes with prefix,
// now dead, left behind (a test binary killed before its cleanup). Routes went with the veths.
func removeLeftovers(prefix string) error {
	var errs []error
	dead := func(name string) bool {
		pid := ownerPID(prefix, name)
		return pid > 0 && !alive(pid)
	}

	var links []struct {
		Name string `json:"ifname"`
	}
	if err := ipJSON(&links, "link", "show"); err != nil {
		return err
	}
	for _, l := range links {
		if dead(l.Name) {
			if _, err := runIP("link", "del", l.Name); err != nil {
				errs = append(errs, err)
			}
		}
	}

	var spaces []struct {
		Name string `json:"name"`
	}
	if err := ipJSON(&spaces, "netns", "list"); err != nil {
		return err
	}
	for _, s := range spaces {
		if dead(s.Name) {
			if _, err := runIP("netns", "del", s.Name); err != nil {
				errs = append(errs, err)
			}
		}
	}

	var lo []struct {
		Addrs []struct {
			Family string `json:"family"`
			Local  string `json:"local"`
			Len    int    `json:"prefixlen"`
			Label  string `json:"label"`
		} `json:"addr_info"`
	}
	if err := ipJSON(&lo, "addr", "show", "dev", "lo"); err != nil {
		return err
	}
	for _, l := range lo {
		for _, a := range l.Addrs {
			if a.Family != "inet" || !dead(a.Label) {
				continue
			}
			p, err := netip.ParseAddr(a.Local)
			if err != nil {
				continue
			}
			if _, err := runIP("addr", "del", netip.PrefixFrom(p, a.Len).String(), "dev", "lo"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
