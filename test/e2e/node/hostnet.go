package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// uplink is the interface of the default route and its address: the node's InternalIP, which
// kubelet wants not to be a loopback address. Talking to it sends nothing out.
type uplink struct {
	Dev  string
	Addr netip.Addr
}

func findUplink() (uplink, error) {
	var routes []struct {
		Dev string `json:"dev"`
	}
	if err := ipJSON(&routes, "-4", "route", "show", "default"); err != nil {
		return uplink{}, err
	}
	if len(routes) == 0 || routes[0].Dev == "" {
		return uplink{}, errors.New("no IPv4 default route: the node needs an uplink address for its InternalIP")
	}
	var links []struct {
		Addrs []struct {
			Family string `json:"family"`
			Local  string `json:"local"`
		} `json:"addr_info"`
	}
	if err := ipJSON(&links, "-4", "addr", "show", "dev", routes[0].Dev); err != nil {
		return uplink{}, err
	}
	for _, l := range links {
		for _, a := range l.Addrs {
			if ip, err := netip.ParseAddr(a.Local); err == nil && a.Family == "inet" {
				return uplink{Dev: routes[0].Dev, Addr: ip}, nil
			}
		}
	}
	return uplink{}, fmt.Errorf("no IPv4 address on %s, the default route's interface", routes[0].Dev)
}

// guardNetwork makes sure nothing the node does can leave the machine, before anything of it
// starts and before forwarding is switched on:
//   - the Pod range is unreachable, but for the node's subnet, which the CNI bridge routes;
//   - the Service range is routed into an ifb device, which drops every packet sent to it. An
//     unreachable route would do the same for Pods' packets, which kube-proxy DNATs before
//     routing, but the host's own (a hostNetwork node-local cache asking kube-dns) would be
//     refused at the first route lookup, before kube-proxy's DNAT in nat OUTPUT could run;
//   - in mangle FORWARD, ahead of anything kube-proxy puts in filter FORWARD, every forwarded
//     packet bound for the uplink is dropped, those to the two ranges counted by rules of
//     their own; in mangle POSTROUTING the host's own packets to the ranges on the uplink are
//     counted (UplinkPackets);
//   - the node-local cache's and the upstream's addresses go on lo, with NOTRACK for the
//     cache as node-cache sets it up.
func guardNetwork(up uplink) error {
	steps := [][]string{
		{"ip", "route", "add", "unreachable", PodCIDR.String()},
		{"ip", "link", "add", serviceDev, "type", "ifb"},
		{"ip", "link", "set", serviceDev, "up"},
		{"ip", "route", "add", ServiceCIDR.String(), "dev", serviceDev},
		{"ip", "addr", "add", NodeLocalIP.String() + "/32", "dev", "lo", "label", loLabel},
		{"ip", "addr", "add", UpstreamIP.String() + "/32", "dev", "lo", "label", loLabel},

		{"iptables", "-w", "-t", "mangle", "-N", fwdChain},
		{"iptables", "-w", "-t", "mangle", "-A", fwdChain, "-o", up.Dev, "-d", PodCIDR.String(), "-j", "DROP"},
		{"iptables", "-w", "-t", "mangle", "-A", fwdChain, "-o", up.Dev, "-d", ServiceCIDR.String(), "-j", "DROP"},
		{"iptables", "-w", "-t", "mangle", "-A", fwdChain, "-o", up.Dev, "-j", "DROP"},
		{"iptables", "-w", "-t", "mangle", "-I", "FORWARD", "1", "-j", fwdChain},
		{"iptables", "-w", "-t", "mangle", "-N", countChain},
		{"iptables", "-w", "-t", "mangle", "-A", countChain, "-o", up.Dev, "-d", PodCIDR.String()},
		{"iptables", "-w", "-t", "mangle", "-A", countChain, "-o", up.Dev, "-d", ServiceCIDR.String()},
		{"iptables", "-w", "-t", "mangle", "-I", "POSTROUTING", "1", "-j", countChain},

		{"iptables", "-w", "-t", "raw", "-N", rawChain},
		{"iptables", "-w", "-t", "raw", "-A", rawChain, "-d", NodeLocalIP.String(), "-p", "udp", "--dport", "53", "-j", "NOTRACK"},
		{"iptables", "-w", "-t", "raw", "-A", rawChain, "-d", NodeLocalIP.String(), "-p", "tcp", "--dport", "53", "-j", "NOTRACK"},
		{"iptables", "-w", "-t", "raw", "-A", rawChain, "-s", NodeLocalIP.String(), "-p", "udp", "--sport", "53", "-j", "NOTRACK"},
		{"iptables", "-w", "-t", "raw", "-A", rawChain, "-s", NodeLocalIP.String(), "-p", "tcp", "--sport", "53", "-j", "NOTRACK"},
		{"iptables", "-w", "-t", "raw", "-I", "PREROUTING", "1", "-j", rawChain},
		{"iptables", "-w", "-t", "raw", "-I", "OUTPUT", "1", "-j", rawChain},
	}
	for _, s := range steps {
		if _, err := run(s...); err != nil {
			return err
		}
	}
	// Only now: the CNI bridge plugin would switch it on by itself at the first Pod.
	return writeSysctl("net/ipv4/ip_forward", "1")
}

// UplinkPackets is how many packets to the Pod or Service range went to the uplink: dropped
// when forwarded, sent when the host's own. Both must stay 0.
func uplinkPackets() (forwarded, own uint64, err error) {
	f, err := chainPackets("mangle", fwdChain, 2)
	if err != nil {
		return 0, 0, err
	}
	o, err := chainPackets("mangle", countChain, 2)
	return f, o, err
}

// chainPackets sums the packet counters of the first n rules of chain.
func chainPackets(table, chain string, n int) (uint64, error) {
	out, err := run("iptables", "-w", "-t", table, "-L", chain, "-v", "-x", "-n")
	if err != nil {
		return 0, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2+n {
		return 0, fmt.Errorf("chain %s/%s has fewer than %d rules:\n%s", table, chain, n, out)
	}
	var sum uint64
	for _, l := range lines[2 : 2+n] {
		f := strings.Fields(l)
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("counter of %q: %v", l, err)
		}
		sum += v
	}
	return sum, nil
}

// unguardNetwork removes what guardNetwork added; what is already gone is no error.
func unguardNetwork() {
	for _, t := range []struct{ table, from, chain string }{
		{"mangle", "FORWARD", fwdChain}, {"mangle", "POSTROUTING", countChain},
		{"raw", "PREROUTING", rawChain}, {"raw", "OUTPUT", rawChain},
	} {
		for range 10 { // a killed run and this one may each have added a jump
			if _, err := run("iptables", "-w", "-t", t.table, "-D", t.from, "-j", t.chain); err != nil {
				break
			}
		}
	}
	for _, t := range []struct{ table, chain string }{{"mangle", fwdChain}, {"mangle", countChain}, {"raw", rawChain}} {
		_, _ = run("iptables", "-w", "-t", t.table, "-F", t.chain)
		_, _ = run("iptables", "-w", "-t", t.table, "-X", t.chain)
	}
	_, _ = run("ip", "route", "del", "unreachable", PodCIDR.String())
	_, _ = run("ip", "link", "del", serviceDev) // and its route
	_, _ = run("ip", "addr", "del", NodeLocalIP.String()+"/32", "dev", "lo")
	_, _ = run("ip", "addr", "del", UpstreamIP.String()+"/32", "dev", "lo")
	_, _ = run("ip", "link", "del", bridge)
}

// The sysctls the node or its daemons may change: forwarding (the node), kubelet's kernel
// tunables, kube-proxy's conntrack and localnet settings. Their values before the first
// change are kept in a file, so that a later run restores what a killed one changed.
var sysctls = []string{
	"net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding",
	"net/ipv4/conf/all/route_localnet", "net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables",
	"net/netfilter/nf_conntrack_max", "net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait", "net/netfilter/nf_conntrack_udp_timeout",
	"net/netfilter/nf_conntrack_udp_timeout_stream",
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

var sysctlState = filepath.Join(varDir, "sysctl.json")

// saveSysctls records the current values, unless a killed run's record is still there.
func saveSysctls() error {
	if _, err := os.Stat(sysctlState); err == nil {
		return nil
	}
	vals := map[string]string{}
	for _, k := range sysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			vals[k] = strings.TrimSpace(string(v))
		}
	}
	b, err := json.Marshal(vals)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(sysctlState), 0o755); err != nil {
		return err
	}
	return os.WriteFile(sysctlState, b, 0o644)
}

// restoreSysctls puts back the recorded values and drops the record.
func restoreSysctls() error {
	b, err := os.ReadFile(sysctlState)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	vals := map[string]string{}
	if err := json.Unmarshal(b, &vals); err != nil {
		return fmt.Errorf("%s: %w", sysctlState, err)
	}
	var errs []error
	for k, v := range vals {
		if cur, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil && strings.TrimSpace(string(cur)) == v {
			continue
		}
		if err := writeSysctl(k, v); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		errs = append(errs, os.Remove(sysctlState))
	}
	return errors.Join(errs...)
}

func writeSysctl(key, value string) error {
	if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", strings.ReplaceAll(key, "/", "."), value, err)
	}
	return nil
}

// run runs a command and returns its output; an error carries the output.
func run(argv ...string) (string, error) {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func ipJSON(v any, args ...string) error {
	out, err := exec.Command("ip", append([]string{"-j"}, args...)...).Output()
	if err != nil {
		return fmt.Errorf("ip %s: %v", strings.Join(args, " "), err)
	}
	if len(strings.TrimSpace(string(out))) == 0 {
		return nil
	}
	return json.Unmarshal(out, v)
}
