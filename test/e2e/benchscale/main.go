// Command benchscale is `make bench-scale`: the memory of CoreDNS with and without nsguard on
// a real kube-apiserver holding a cluster of the size the project names as its scale (5,000
// namespaces, 20,000 Services each with one EndpointSlice, 50,000 Pods of about 9 KB in
// protobuf), each configuration alone on the machine. For each: the peak resident memory
// (VmHWM) through the first sync and through the relist that follows an API server restart,
// the Go heap after the sync, and the watches CoreDNS's user agents hold, from the API
// server's audit log. See package test/e2e/scale.
//
// It is a benchmark: it fails only on a broken run, and people judge the ratios. The table
// goes to stdout and bin/bench-scale/table.md, every figure to bin/bench-scale.txt, and each
// configuration's Corefile and log to bin/bench-scale/round-<k>/<configuration>/. Every
// configuration runs -rounds times, interleaved; the table gives medians and ranges.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/scale"
)

var (
	namespaces   = flag.Int("namespaces", scale.Full.Namespaces, "namespaces")
	servicesPer  = flag.Int("services-per-namespace", scale.Full.ServicesPerNamespace, "Services per namespace, each with one EndpointSlice")
	podsPer      = flag.Int("pods-per-namespace", scale.Full.PodsPerNamespace, "Pods per namespace")
	headless     = flag.Int("headless-every", scale.Full.HeadlessEvery, "every how many Services one is headless")
	workers      = flag.Int("workers", scale.DefaultWorkers, "requests in flight while creating")
	churn        = flag.Int("churn", 3000, "ConfigMaps created and deleted before each API server restart")
	podsVerified = flag.Bool("pods-verified", false, "also run kubernetes with pods verified, for reference (about 2 GB at the full size)")
	only         = flag.String("only", "", "comma-separated configurations to run, by number: 1 kubernetes alone, 2 + nsguard, 3 + nsguard clients off, 4 pods verified, 5 + nsguard clients off and findings off (default: 1,2,3,5, and 4 with -pods-verified)")
	ip           = flag.String("ip", "127.53.60.1", "loopback address CoreDNS binds, port 53")
	timeout      = flag.Duration("timeout", 10*time.Minute, "bound on each wait: a sync, a relist")
	saveEtcd     = flag.String("save-etcd", "", "after the run, keep etcd's data (the cluster as created) in this directory, for -reuse-etcd")
	reuseEtcd    = flag.String("reuse-etcd", "", "start etcd from a copy of the data -save-etcd kept for the same size, and create nothing")
	steady       = flag.Bool("steady", true, "before the restart, wait for CoreDNS's first collection after its sync settled (up to 2 minutes), so every configuration meets the relist under the heap goal of steady state")
	watchFor     = flag.Duration("watch", 150*time.Second, "watch each configuration's peak this long after the API server is back, at least: past nsguard's held Pod relist and the Go runtime's collection every 2 minutes")
	rounds       = flag.Int("rounds", 3, "rounds of every configuration, interleaved, each round in a rotated order: one run's peak moves by tens of MiB")
	memoryLimit  = flag.String("memory-limit", "rule", "the memory limit every configuration is sized to, GOMEMLIMIT at 90% of it: 'rule' (the README's rule for the size), 'none', or a quantity such as 300Mi")
	gcTrace      = flag.Bool("gctrace", true, "run CoreDNS with GODEBUG=gctrace=1 and report what its collector marked live")
	reload       = flag.Bool("reload", true, "after each round, reload the Corefile of a CoreDNS in mode refuse with 'allow client kube-system' under load, and count the allowed client's refusals, the lines without pod= and nsguard's Pod lists")
	reloadWatch  = flag.Duration("reload-watch", 60*time.Second, "how long the clients ask after the reload completed")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-scale:", err)
		coredns.StopAll()
		cluster.KillAll()
		os.Exit(1)
	}
}

func configs() ([]scale.Config, error) {
	all := []scale.Config{scale.KubernetesAlone, scale.NSGuard, scale.NSGuardClientsOff, scale.PodsVerified, scale.NSGuardNothingLive}
	pick := "1,2,3,5"
	if *podsVerified {
		pick += ",4"
	}
	if *only != "" {
		pick = *only
	}
	var out []scale.Config
	for _, f := range strings.Split(pick, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n < 1 || n > len(all) {
			return nil, fmt.Errorf("-only %q: want numbers from 1 to %d", *only, len(all))
		}
		out = append(out, all[n-1])
	}
	return out, nil
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer cluster.KillAll()
	defer coredns.StopAll()
	began := time.Now()

	size := scale.Size{Namespaces: *namespaces, ServicesPerNamespace: *servicesPer, PodsPerNamespace: *podsPer, HeadlessEvery: *headless}
	cfgs, err := configs()
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("run as root: CoreDNS binds %s:53, and /proc/PID/clear_refs resets its peak", *ip)
	}
	if err := coredns.CheckPortFree(*ip); err != nil {
		return err
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	out, err := cluster.FreshOutputDir(root, "bench-scale")
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Since(began).Round(time.Second)}, args...)...)
	}

	binDir, err := cluster.BuildTools(ctx)
	if err != nil {
		return err
	}
	bin, err := coredns.Build(ctx, root, out)
	if err != nil {
		return err
	}
	if *reuseEtcd != "" {
		if err := scale.CopyEtcdData(*reuseEtcd, filepath.Join(out, "cluster"), size); err != nil {
			return err
		}
	}
	cp, auditLog, err := scale.StartControlPlane(ctx, binDir, filepath.Join(out, "cluster"))
	if err != nil {
		return err
	}
	defer cp.Stop()
	complete := *reuseEtcd != "" // etcd holds the whole cluster: only then is it worth keeping
	if *saveEtcd != "" {
		defer func() {
			if !complete {
				logf("not keeping etcd's data: the cluster was not created whole")
				return
			}
			cp.Stop()
			if err := scale.SaveEtcdData(filepath.Join(out, "cluster"), *saveEtcd, size); err != nil {
				logf("keeping etcd's data: %v", err)
			}
		}()
	}
	cs, err := scale.Client(cp)
	if err != nil {
		return err
	}

	var report strings.Builder
	say := func(format string, args ...any) {
		fmt.Fprintf(&report, format+"\n", args...)
		fmt.Printf(format+"\n", args...)
	}
	say("cluster: %s", size)
	t := time.Now()
	var created time.Duration
	if *reuseEtcd == "" {
		timings, err := scale.Create(ctx, cs, size, *workers, logf)
		if err != nil {
			return err
		}
		created = time.Since(t)
		for _, tm := range timings {
			say("created %s", tm)
		}
		say("created the cluster in %v with %d workers", created.Round(time.Second), *workers)
		complete = true
	} else {
		say("the cluster as an earlier run created it: etcd's data from %s", *reuseEtcd)
	}
	for _, p := range []int{1, 0} { // a Deployment's Pod, a StatefulSet's
		sz, pod, err := scale.PodSize(ctx, cs, size, p)
		if err != nil {
			return err
		}
		say("Pod %s/%s: %d bytes in protobuf (%d of them managedFields, %d entries), %d in JSON; %d containers, %d env vars in the first",
			pod.Namespace, pod.Name, sz.Proto, sz.ManagedFieldsProto, len(pod.ManagedFields), sz.JSON, len(pod.Spec.Containers), len(pod.Spec.Containers[0].Env))
	}

	limit, err := limitFor(size)
	if err != nil {
		return err
	}
	if limit > 0 {
		say("memory limit %s (%d bytes), GOMEMLIMIT %d bytes: %s", scale.MiB(float64(limit)), limit, scale.GoMemLimit(limit), *memoryLimit)
	}
	env := scale.Env{CP: cp, Client: cs, CoreDNS: bin, Dir: out, IP: *ip, AuditLog: auditLog,
		Churn: *churn, Workers: *workers, Timeout: *timeout, Watch: *watchFor, Steady: *steady, Logf: logf,
		MemoryLimit: limit, GCTrace: *gcTrace}
	if *rounds < 1 {
		return fmt.Errorf("-rounds %d: want 1 or more", *rounds)
	}
	names := make([]string, len(cfgs))
	for i, c := range cfgs {
		names[i] = c.Name
	}
	var results []scale.Result // every run that worked, in the order run
	all := make([][]scale.Result, *rounds)
	var broken []string // runs that failed: the others are still reported
	var reloads []string
	for k := range *rounds {
		all[k] = make([]scale.Result, len(cfgs))
		for j := range cfgs {
			i := (j + k) % len(cfgs) // no configuration always runs first, on a cold page cache
			c := cfgs[i]
			t := time.Now()
			e := env
			e.Dir = filepath.Join(out, fmt.Sprintf("round-%d", k+1))
			r, err := scale.Measure(ctx, e, c)
			if err != nil {
				logf("round %d, %s: %v", k+1, c.Name, err)
				broken = append(broken, fmt.Sprintf("round %d, %s: %v", k+1, c.Name, err))
				if ctx.Err() != nil {
					return fmt.Errorf("%s: %w", c.Name, err)
				}
				if rerr := cp.RestartAPIServer(ctx); rerr != nil { // the failure may have left it down
					return fmt.Errorf("restarting the API server after %s: %v", c.Name, rerr)
				}
				continue
			}
			all[k][i] = r
			results = append(results, r)
			say("round %d, %s: ran in %v (sync %v; churn %v; API server restart %v; relist and settle %v); peak %s", k+1, c.Name, time.Since(t).Round(time.Second),
				r.SyncTime.Round(100*time.Millisecond), r.ChurnTime.Round(100*time.Millisecond), r.RestartTime.Round(100*time.Millisecond), r.RelistTime.Round(100*time.Millisecond),
				scale.MiB(float64(r.Peak())))
		}
		if *reload {
			e := env
			e.Dir = filepath.Join(out, fmt.Sprintf("round-%d", k+1))
			r, err := scale.Reload(ctx, e, *reloadWatch)
			if err != nil {
				logf("round %d, reload: %v", k+1, err)
				broken = append(broken, fmt.Sprintf("round %d, reload: %v", k+1, err))
				if ctx.Err() != nil {
					return err
				}
				continue
			}
			line := fmt.Sprintf("round %d: %s", k+1, r)
			for _, l := range append(r.LinesNoPod, r.AllowedLines...) {
				line += "\n  - " + l
			}
			reloads = append(reloads, line)
			say("round %d, reload: %s", k+1, r)
		}
	}
	if len(results) == 0 {
		return fmt.Errorf("no run worked:\n%s", strings.Join(broken, "\n"))
	}

	say("")
	say("Over %d rounds:", *rounds)
	say("")
	say("%s", scale.Summary(names, all))
	for k, round := range all {
		var ok []scale.Result
		for _, r := range round {
			if r.Config != "" {
				ok = append(ok, r)
			}
		}
		if len(ok) > 0 && ok[0].Config == names[0] {
			say("Round %d:\n\n%s", k+1, scale.Table(ok))
		}
	}
	say("Peak beside the memory limit, every round:\n\n%s", scale.Limits(names, all))
	if len(reloads) > 0 {
		say("A Corefile reload under load (%s, the allowed client and another asking without pause), by round:", scale.ReloadGuard.Name)
		for _, l := range reloads {
			say("- %s", l)
		}
		say("")
	}
	say("Relist after the API server restart (the new watch cache refuses the old resource version):")
	for _, r := range results {
		say("- %s: watch of namespaces from resourceVersion %s answered %q; LISTs and streaming lists after the restart: %v; watches resumed from a resource version: %v; probes (LISTs of a few): %v; missing: %s",
			r.Config, r.Relist.OldRV, r.Relist.Refused, r.Relist.Requests, r.Relist.Resumed, r.Relist.Probes, orNone(r.Relist.Missing))
		for _, l := range r.Relist.Sequence {
			say("  - %s", l)
		}
	}
	say("")
	say("Watches CoreDNS holds after the sync, by user agent and resource (API server audit log):")
	for _, r := range results {
		say("- %s: %v (full-state requests during the sync: %v)", r.Config, r.Watches, r.SyncLists)
	}
	say("")
	say("ran in %v", time.Since(began).Round(time.Second))

	if err := os.WriteFile(filepath.Join(out, "table.md"), []byte(report.String()), 0o644); err != nil {
		return err
	}
	raw := fmt.Sprintf("# %s; created in %v\n", size, created.Round(time.Second)) + scale.Raw(results)
	if err := os.WriteFile(filepath.Join(root, "bin", "bench-scale.txt"), []byte(raw), 0o644); err != nil {
		return err
	}
	if len(broken) > 0 {
		return fmt.Errorf("broken runs:\n%s", strings.Join(broken, "\n"))
	}
	for _, r := range results {
		if !r.Relist.Observed {
			return fmt.Errorf("%s: the API server restart caused no relist (see above): the peak through a relist was not measured", r.Config)
		}
	}
	return nil
}

// limitFor is the memory limit of -memory-limit for size, in bytes; 0 for none.
func limitFor(size scale.Size) (uint64, error) {
	switch *memoryLimit {
	case "rule":
		return scale.MemoryLimit(size), nil
	case "none", "":
		return 0, nil
	}
	q, err := resource.ParseQuantity(*memoryLimit)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("-memory-limit %q: want 'rule', 'none' or a quantity such as 300Mi", *memoryLimit)
	}
	return uint64(q.Value()), nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
