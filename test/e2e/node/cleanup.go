package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/apimachinery/pkg/util/wait"
)

// containerdSock is containerd's socket; its shims carry it in their command line.
var containerdSock = filepath.Join(runDir, "containerd", "containerd.sock")

// ownerFile holds the process ID of the test binary or demo that runs the node.
var ownerFile = filepath.Join(runDir, "owner")

// claim refuses to start while another live process runs a node, and records this one.
func claim() error {
	if b, err := os.ReadFile(ownerFile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("another node is running, started by process %d (%s): one node per machine", pid, ownerFile)
		}
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(ownerFile, []byte(strconv.Itoa(os.Getpid())), 0o644)
}

// removeAll removes everything the node adds to the host, whether this run or a killed one
// added it: the daemons' children (containers, shims), mounts, network, iptables, sysctls,
// cgroups and directories. toolsBin, when known, gives kube-proxy --cleanup.
func removeAll(toolsBin string) error {
	var errs []error
	killContainers()
	removeContainerLogLinks()
	errs = append(errs, unmountUnder(varDir, runDir))
	if toolsBin != "" {
		// kube-proxy's own chains and rules, for IPv4 and IPv6. It also looks for the IPVS and
		// nftables modes' and says it found no nft: not an error. What it leaves, the
		// suite's check of the host after the node finds.
		_ = exec.Command(filepath.Join(toolsBin, "kube-proxy"), "--cleanup", "--v=0").Run()
	}
	removeKubeChains()
	// The bridge's veths go with their network namespaces; any left are deleted with it.
	for _, v := range bridgePorts() {
		_, _ = run("ip", "link", "del", v)
	}
	unguardNetwork()
	errs = append(errs, restoreSysctls())
	errs = append(errs, removeCgroups())
	for _, d := range []string{varDir, runDir} {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// killContainers kills every process in the node's cgroups (the containers) and every
// containerd shim of the node's containerd, by process ID. The shims outlive containerd by
// design; nothing else on the machine runs in these cgroups or names this socket.
func killContainers() {
	_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Second, true, func(context.Context) (bool, error) {
		pids := append(cgroupPIDs(), shimPIDs()...)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return len(pids) == 0, nil
	})
}

// cgroupHierarchies are the v1 hierarchies that hold the node's cgroup root.
func cgroupHierarchies() []string {
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + cgroupRoot)
	return dirs
}

func cgroupPIDs() []int {
	var pids []int
	for _, h := range cgroupHierarchies() {
		_ = filepath.WalkDir(h, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

func shimPIDs() []int {
	var pids []int
	procs, _ := procfs.AllProcs()
	for _, p := range procs {
		args, err := p.CmdLine()
		if err == nil && len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") && slices.Contains(args, containerdSock) {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// removeCgroups removes the node's cgroups, deepest first, once their processes are gone.
func removeCgroups() error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(h, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			var err error
			// A killed process leaves its cgroup a moment later.
			_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
				if err = syscall.Rmdir(d); errors.Is(err, syscall.ENOENT) {
					err = nil
				}
				return err == nil, nil
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points below any of dirs, deepest first.
func mountsUnder(dirs ...string) ([]string, error) {
	infos, err := procfs.GetMounts()
	if err != nil {
		return nil, err
	}
	var mounts []string
	for _, mi := range infos {
		mp := unescapeMount(mi.MountPoint) // procfs leaves the kernel's octal escapes
		for _, d := range dirs {
			if mp == d || strings.HasPrefix(mp, d+"/") {
				mounts = append(mounts, mp)
			}
		}
	}
	slices.SortFunc(mounts, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return mounts, nil
}

func unescapeMount(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// unmountUnder detaches every mount below dirs: volumes, rootfs, shm and network namespaces.
func unmountUnder(dirs ...string) error {
	var errs []error
	for range 3 { // a mount may hide another at the same place
		mounts, err := mountsUnder(dirs...)
		if err != nil {
			return err
		}
		if len(mounts) == 0 {
			return nil
		}
		errs = errs[:0]
		for _, m := range mounts {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("umount %s: %w", m, err))
			}
		}
	}
	return errors.Join(errs...)
}

// removeKubeChains deletes every KUBE-* chain and the rules that jump to them, in each table
// of iptables and ip6tables: kubelet's canaries, and what kube-proxy --cleanup leaves (its
// KUBE-FIREWALL). Nothing but this node's daemons makes such chains on this machine.
func removeKubeChains() {
	for _, ipt := range []string{"iptables", "ip6tables"} {
		out, err := run(ipt + "-save")
		if err != nil {
			continue
		}
		table := ""
		var jumps [][]string
		chains := map[string][]string{} // table -> chains
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(l, "*"):
				table = l[1:]
			case strings.HasPrefix(l, ":KUBE-"):
				chains[table] = append(chains[table], strings.Fields(l[1:])[0])
			case strings.HasPrefix(l, "-A ") && strings.Contains(l, " -j KUBE-"):
				f := strings.Fields(l)
				if !strings.HasPrefix(f[1], "KUBE-") {
					jumps = append(jumps, append([]string{ipt, "-w", "-t", table, "-D"}, splitRule(l[3:])...))
				}
			}
		}
		for _, j := range jumps {
			_, _ = run(j...)
		}
		for t, cs := range chains {
			for _, c := range cs {
				_, _ = run(ipt, "-w", "-t", t, "-F", c)
			}
			for _, c := range cs {
				_, _ = run(ipt, "-w", "-t", t, "-X", c)
			}
		}
	}
}

// splitRule splits a rule of iptables-save into arguments, keeping quoted comments whole.
func splitRule(rule string) []string {
	var args []string
	var cur strings.Builder
	quoted := false
	for _, r := range rule {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

// bridgePorts lists the interfaces enslaved to the node's bridge.
func bridgePorts() []string {
	var links []struct {
		Name string `json:"ifname"`
	}
	if err := ipJSON(&links, "link", "show", "master", bridge); err != nil {
		return nil
	}
	var names []string
	for _, l := range links {
		names = append(names, l.Name)
	}
	return names
}
