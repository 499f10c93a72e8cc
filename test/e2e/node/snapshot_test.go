//go:build e2e

package node

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// host is what the node may change on the machine: links, addresses, routes, iptables rules
// of the node and its daemons, the sysctls it records, its mounts, cgroups and directories.
type host map[string][]string

var ourRules = regexp.MustCompile(`KUBE-|CNI-|NSGUARD-NODE|` + regexp.QuoteMeta(PodCIDR.String()) + `|` + regexp.QuoteMeta(ServiceCIDR.String()))

func snapshotHost() (host, error) {
	h := host{}
	for _, c := range [][]string{
		{"ip", "-o", "link", "show"}, {"ip", "-o", "addr", "show", "dev", "lo"}, {"ip", "route", "show"},
		{"ip", "netns", "list"},
	} {
		out, err := run(c...)
		if err != nil {
			return nil, err
		}
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			// Other suites' veths, namespaces and lo addresses come and go meanwhile.
			if strings.Contains(l, bridge) || strings.Contains(l, serviceDev) || strings.Contains(l, "veth") && strings.Contains(l, "master") ||
				strings.Contains(l, loLabel) || strings.Contains(l, PodCIDR.String()) || strings.Contains(l, ServiceCIDR.String()) || strings.HasPrefix(l, "cni-") {
				lines = append(lines, l)
			}
		}
		h[strings.Join(c, " ")] = lines
	}
	for _, ipt := range []string{"iptables-save", "ip6tables-save"} {
		out, err := run(ipt)
		if err != nil {
			return nil, err
		}
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if ourRules.MatchString(l) {
				lines = append(lines, l)
			}
		}
		h[ipt] = lines
	}
	for _, k := range sysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			h["sysctl "+k] = []string{strings.TrimSpace(string(v))}
		}
	}
	mounts, err := mountsUnder(varDir, runDir)
	if err != nil {
		return nil, err
	}
	h["mounts"] = mounts
	h["cgroups"] = cgroupHierarchies()
	for _, d := range []string{varDir, runDir, containerLogDir} {
		if _, err := os.Stat(d); err == nil {
			h["dirs"] = append(h["dirs"], d)
		}
	}
	return h, nil
}

// diff lists what after holds that before did not, and what changed; what went (a killed
// run's leftovers, removed at the start) is no fault.
func (before host) diff(after host) string {
	var out []string
	keys := make([]string, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, l := range after[k] {
			if !slices.Contains(before[k], l) {
				out = append(out, fmt.Sprintf("%s: + %s", k, l))
			}
		}
	}
	return strings.Join(out, "\n")
}
