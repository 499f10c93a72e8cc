// Command bench is `make bench`: dnsperf against real CoreDNS servers in front of a real
// kube-apiserver, one server per configuration, each measured in rounds side by side with the
// any floor (both under dnsperf at once, so both see the same noisy host), then a CPU profile
// of each alone under the same load.
//
// The cluster holds the incident's objects and 200 more namespaces of 5 ClusterIP Services.
// The mix (mix.go) is 2,000 distinct questions a pod in new-namespace-1 sends with ndots:5:
// 45% NXDOMAIN search candidates, 35% Service answers, 10% namespace apexes (A and AAAA),
// 5% Pod names, 5% SRV. No server has cache, so every query crosses the chain. The any
// plugin, which does nothing with these queries, is the floor of what a plugin in front of
// kubernetes costs: its frame stays on each query's stack while kubernetes runs.
//
// On 2 cores dnsperf -T 1 takes about 0.4 of a core and keeps 200 queries waiting on
// CoreDNS (0.14 each when two run side by side). -T 2 gave no more QPS and only took CPU
// away from CoreDNS.
package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

type config struct {
	name, ip    string
	before      []string // lines before nsguard, such as any
	nsguard     string   // the nsguard block, with %s for the kubeconfig; empty for none
	after       []string
	refusesApex bool
}

var configs = []config{
	{name: "kubernetes alone", ip: "127.53.10.1"},
	{name: "any (the floor)", ip: "127.53.10.2", before: []string{"any"}},
	// Outside a cluster and without kubeconfig, nsguard runs without a view: its core checks only.
	{name: "nsguard, mode log, no view", ip: "127.53.10.3", nsguard: "nsguard"},
	// kubeconfig turns the cluster view on, as running in a pod does.
	{name: "nsguard, mode log", ip: "127.53.10.4", nsguard: "nsguard {\n        kubeconfig %s\n    }"},
	{name: "nsguard, mode refuse", ip: "127.53.10.5", nsguard: "nsguard {\n        mode refuse\n        kubeconfig %s\n    }", refusesApex: true},
	// The workaround in use today. fallthrough: every other name must reach kubernetes.
	{name: "template NXDOMAIN workaround", ip: "127.53.10.6", refusesApex: true, after: []string{
		"template IN ANY cluster.local {",
		`    match "^[^.]+[.]svc[.]cluster[.]local[.]$"`,
		"    rcode NXDOMAIN",
		"    fallthrough",
		"}",
	}},
}

var (
	rounds   = flag.Int("rounds", 60, "interleaved rounds")
	seconds  = flag.Int("seconds", 3, "dnsperf -l per configuration and round")
	clients  = flag.Int("clients", 8, "dnsperf -c")
	threads  = flag.Int("threads", 1, "dnsperf -T")
	inflight = flag.Int("outstanding", 200, "dnsperf -q")
	profiled = flag.Int("profile", 20, "seconds of CPU profile per configuration, under dnsperf; 0 for none")
	// Side by side, each configuration runs at the same time as the any floor, so both see
	// the same neighbours and the same steal; one after the other, a round spans 20 seconds.
	sideBySide = flag.Bool("side-by-side", true, "run each configuration beside any, both under dnsperf at once; false: one after the other")
	// A rare loopback drop holds dnsperf busy-waiting at the end for up to -t.
	timeout = flag.Int("timeout", 1, "dnsperf -t, seconds")
	// Batches of the same code, pooled: nothing is started.
	pool = flag.String("pool", "", "comma-separated rounds.csv files of earlier side-by-side runs: print their pooled ratios to any, and stop")
)

func main() {
	flag.Parse()
	if *pool != "" {
		t, err := pooled(strings.Split(*pool, ","))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Print(t)
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		coredns.StopAll()
		cluster.KillAll()
		os.Exit(1)
	}
}

func run() error {
	// cluster's own handler also kills its children on SIGINT; this one stops dnsperf and
	// the loop. Children carry Pdeathsig, so none outlives this process either way.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer cluster.KillAll()
	defer coredns.StopAll()

	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	for _, c := range configs {
		if err := coredns.CheckPortFree(c.ip); err != nil {
			return err
		}
	}
	out, err := cluster.FreshOutputDir(root, "bench")
	if err != nil {
		return err
	}
	questions := makeMix()
	mix := filepath.Join(out, "querymix.txt")
	if err := writeMix(mix, questions); err != nil {
		return err
	}
	began := time.Now()

	binDir, err := cluster.BuildTools(ctx)
	if err != nil {
		return err
	}
	bin, err := coredns.Build(ctx, root, out)
	if err != nil {
		return err
	}
	cp, err := cluster.Start(ctx, binDir, filepath.Join(out, "cluster"))
	if err != nil {
		return err
	}
	defer cp.Stop()
	if err := cluster.ApplyIncident(ctx, cp.Clientset(), "10.244.1.5"); err != nil {
		return err
	}
	if err := createBenchObjects(ctx, cp.Clientset()); err != nil {
		return err
	}
	zones := filepath.Join(out, "zones")
	if err := os.MkdirAll(zones, 0o755); err != nil {
		return err
	}
	if err := coredns.WriteUpstreamZones(zones); err != nil {
		return err
	}

	servers := make([]*coredns.Server, len(configs))
	for i, c := range configs {
		if servers[i], err = startServer(ctx, bin, out, zones, cp.Kubeconfig, c); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	for i, c := range configs {
		if err := checkMix(questions, servers[i], c); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if _, err := dnsperf(ctx, mix, c.ip, 2); err != nil { // warm up
			return err
		}
	}

	how := "one after the other"
	if *sideBySide {
		how = "each beside any"
	}
	fmt.Printf("dnsperf -l %d -c %d -T %d -q %d -t %d, %d rounds, %s\n", *seconds, *clients, *threads, *inflight, *timeout, *rounds, how)
	var rows []sample
	for r := range *rounds {
		for k := range configs {
			i := (r + k) % len(configs) // rotate who goes first
			if !*sideBySide {
				s, err := measure(ctx, mix, servers[i:i+1], configs[i].ip)
				if err != nil {
					return fmt.Errorf("round %d, %s: %w", r, configs[i].name, err)
				}
				s[0].round, s[0].config, s[0].pair = r, i, -1
				rows = append(rows, s[0])
				continue
			}
			if i == floorConfig {
				continue // it runs beside every other
			}
			s, err := measure(ctx, mix, []*coredns.Server{servers[i], servers[floorConfig]}, configs[i].ip, configs[floorConfig].ip)
			if err != nil {
				return fmt.Errorf("round %d, %s beside any: %w", r, configs[i].name, err)
			}
			s[0].round, s[0].config, s[0].pair = r, i, i
			s[1].round, s[1].config, s[1].pair = r, floorConfig, i
			rows = append(rows, s...)
		}
		fmt.Fprintf(os.Stderr, "round %d/%d done\n", r+1, *rounds)
	}

	table := summarize(rows, *rounds)
	if *profiled > 0 {
		shares, err := profileAll(ctx, bin, out, mix, servers)
		if err != nil {
			return err
		}
		table += "\n" + shareTable(shares)
	}
	if *sideBySide {
		ft, err := floorTable(rows)
		if err != nil {
			return err
		}
		table += "\n" + ft
	}
	fmt.Print(table)
	if err := writeCSV(filepath.Join(out, "rounds.csv"), rows); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "table.md"), []byte(table), 0o644); err != nil {
		return err
	}
	if err := report(servers); err != nil {
		return err
	}
	for i, s := range servers {
		if err := s.Stop(); err != nil {
			return fmt.Errorf("%s: %w", configs[i].name, err)
		}
	}
	fmt.Printf("ran %s\n", time.Since(began).Round(time.Second))
	return nil
}

// pprofAddrs are the pprof listeners of the servers.
var pprofAddrs = map[*coredns.Server]string{}

func startServer(ctx context.Context, bin, out, zones, kubeconfig string, c config) (*coredns.Server, error) {
	metrics, err := coredns.FreeTCPAddr()
	if err != nil {
		return nil, err
	}
	pprofAddr, err := coredns.FreeTCPAddr()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(out, c.ip)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cf := coredns.Config{IP: c.ip, Kubeconfig: kubeconfig, Metrics: metrics, ZoneDir: zones,
		Before: append([]string{"pprof " + pprofAddr}, c.before...), After: c.after, Kubernetes: []string{"pods insecure"}}
	if c.nsguard != "" {
		cf.NSGuard = c.nsguard
		if strings.Contains(c.nsguard, "%s") {
			cf.NSGuard = fmt.Sprintf(c.nsguard, kubeconfig)
		}
	}
	s, err := coredns.Start(ctx, bin, dir, c.ip, cf.Corefile(), metrics, "cluster.local")
	if err != nil {
		return nil, err
	}
	pprofAddrs[s] = pprofAddr
	if strings.Contains(c.nsguard, "kubeconfig") {
		return s, s.WaitViewSynced(ctx) // every round measures the view
	}
	return s, nil
}

// checkMix asks every question of the mix once and checks that each gets what the
// kubernetes plugin answers, or NXDOMAIN for an apex where the configuration refuses it.
func checkMix(mix []question, s *coredns.Server, c config) error {
	got := map[string]int{}
	for _, q := range mix {
		m, err := s.Exchange(q.name, q.qtype)
		if err != nil {
			return err
		}
		if a, want := answered(m), expected(q, c.refusesApex); a != want {
			return fmt.Errorf("%s %d: %s, want %s", q.name, q.qtype, a, want)
		}
		got[q.class]++
	}
	fmt.Printf("%-30s mix as answered: %v\n", c.name, got)
	return nil
}

type sample struct {
	round, config   int
	qps             float64
	completed, lost int64
	cpu, perfCPU    time.Duration // CoreDNS's and dnsperf's CPU time
	wall            time.Duration // dnsperf's run, a little over -l
	steal           float64       // the share of the machine's CPU time the hypervisor took meanwhile
	pair            int           // side by side: the configuration beside any in this run; else -1
}

// The configurations ratios are taken to.
const (
	baseConfig  = 0 // kubernetes alone
	floorConfig = 1 // any
)

func (s sample) cpuPerQuery() float64 {
	return float64(s.cpu.Microseconds()) / float64(s.completed)
}

// measure runs one dnsperf per server, all at once, and reads each server's CPU time
// around them.
func measure(ctx context.Context, mix string, servers []*coredns.Server, ips ...string) ([]sample, error) {
	before := make([]time.Duration, len(servers))
	for i, s := range servers {
		var err error
		if before[i], err = s.CPUTime(); err != nil {
			return nil, err
		}
	}
	stolen, total, err := stealTicks()
	if err != nil {
		return nil, err
	}
	res := make([]sample, len(servers))
	errs := make(chan error, len(servers))
	for i := range servers {
		go func() {
			var err error
			res[i], err = dnsperf(ctx, mix, ips[i], *seconds)
			errs <- err
		}()
	}
	for range servers {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return nil, err
	}
	stolen2, total2, err := stealTicks()
	if err != nil {
		return nil, err
	}
	for i, s := range servers {
		after, err := s.CPUTime()
		if err != nil {
			return nil, err
		}
		res[i].cpu = after - before[i]
		if total2 > total {
			res[i].steal = float64(stolen2-stolen) / float64(total2-total)
		}
	}
	return res, nil
}

// stealTicks reads the machine's steal time and all its CPU time from /proc/stat. On a
// shared host the hypervisor's steal also evicts CoreDNS's caches: it is what makes a round
// swing, so the summary states it.
func stealTicks() (steal, total uint64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %q: %w", v, err)
		}
		if i < 8 { // user nice system idle iowait irq softirq steal; guest time is in user already
			total += n
		}
		if i == 7 {
			steal = n
		}
	}
	return steal, total, nil
}

var (
	reCompleted = regexp.MustCompile(`Queries completed:\s+(\d+)`)
	reLost      = regexp.MustCompile(`Queries lost:\s+(\d+)`)
	reQPS       = regexp.MustCompile(`Queries per second:\s+([\d.]+)`)
	reRcodes    = regexp.MustCompile(`Response codes:\s+(.*)`)
)

func dnsperf(ctx context.Context, mix, ip string, secs int) (sample, error) {
	cmd := exec.CommandContext(ctx, "dnsperf", "-s", ip, "-d", mix, "-l", strconv.Itoa(secs),
		"-c", strconv.Itoa(*clients), "-T", strconv.Itoa(*threads), "-q", strconv.Itoa(*inflight), "-t", strconv.Itoa(*timeout))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	b, err := cmd.CombinedOutput()
	wall, out := time.Since(start), string(b)
	if err != nil {
		return sample{}, fmt.Errorf("dnsperf: %v\n%s", err, out)
	}
	s := sample{wall: wall, perfCPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	m1, m2, m3, m4 := reCompleted.FindStringSubmatch(out), reLost.FindStringSubmatch(out), reQPS.FindStringSubmatch(out), reRcodes.FindStringSubmatch(out)
	if m1 == nil || m2 == nil || m3 == nil || m4 == nil {
		return sample{}, fmt.Errorf("cannot parse dnsperf output:\n%s", out)
	}
	s.completed, _ = strconv.ParseInt(m1[1], 10, 64)
	s.lost, _ = strconv.ParseInt(m2[1], 10, 64)
	s.qps, _ = strconv.ParseFloat(m3[1], 64)
	// Only NOERROR and NXDOMAIN are right answers to the mix; anything else is a broken setup.
	for _, rc := range strings.Split(m4[1], ", ") {
		if !strings.HasPrefix(rc, "NOERROR ") && !strings.HasPrefix(rc, "NXDOMAIN ") {
			return sample{}, fmt.Errorf("dnsperf against %s got %s", ip, m4[1])
		}
	}
	if s.completed == 0 || s.lost*100 > s.completed {
		return sample{}, fmt.Errorf("dnsperf against %s: %d completed, %d lost", ip, s.completed, s.lost)
	}
	return s, nil
}

// summarize medians each configuration's per-round numbers and its per-round ratios to
// kubernetes alone and to the any floor. Side by side, a ratio to any is taken within one
// run, and a ratio to kubernetes alone is the two runs' ratios to any divided; one after the
// other, both are taken within a round.
func summarize(rows []sample, n int) string {
	type run struct{ s, floor sample }
	by := make([][]run, len(configs))
	for i := range by {
		by[i] = make([]run, n)
	}
	for _, s := range rows {
		switch {
		case s.pair < 0: // one after the other
			by[s.config][s.round].s = s
			if s.config == floorConfig {
				for i := range by {
					by[i][s.round].floor = s
				}
			}
		case s.config != floorConfig:
			by[s.config][s.round].s = s
		default:
			by[s.pair][s.round].floor = s
			if s.pair == baseConfig { // any's own figures: from beside kubernetes alone
				by[floorConfig][s.round] = run{s, s}
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | QPS (median) | QPS ratio to kubernetes alone (median, p25–p75) | CPU µs/query (median) | CPU/query ratio to kubernetes alone (median, p25–p75) | CPU/query ratio to any (median, p25–p75) |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|\n")
	iqr := func(v []float64) string {
		return fmt.Sprintf("%.3f (%.3f–%.3f)", quantile(v, .5), quantile(v, .25), quantile(v, .75))
	}
	for i, c := range configs {
		var qps, cpu, qr, cr, fr []float64
		for r := range n {
			x, base := by[i][r], by[baseConfig][r]
			qps, cpu = append(qps, x.s.qps), append(cpu, x.s.cpuPerQuery())
			toFloor := x.s.cpuPerQuery() / x.floor.cpuPerQuery()
			qr = append(qr, (x.s.qps/x.floor.qps)/(base.s.qps/base.floor.qps))
			cr = append(cr, toFloor/(base.s.cpuPerQuery()/base.floor.cpuPerQuery()))
			fr = append(fr, toFloor)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %.1f | %s | %s |\n", c.name, quantile(qps, .5), iqr(qr), quantile(cpu, .5), iqr(cr), iqr(fr))
	}
	var core, perf, steal []float64
	for _, s := range rows {
		core, perf = append(core, s.cpu.Seconds()/s.wall.Seconds()), append(perf, s.perfCPU.Seconds()/s.wall.Seconds())
		steal = append(steal, s.steal)
	}
	fmt.Fprintf(&b, "\nCPU busy (median of runs): CoreDNS %.2f cores, dnsperf %.2f cores. Taken by the hypervisor (steal): median %.0f%%, p25–p75 %.0f–%.0f%%.\n",
		quantile(core, .5), quantile(perf, .5), 100*quantile(steal, .5), 100*quantile(steal, .25), 100*quantile(steal, .75))
	return b.String()
}

// profileAll takes a CPU profile of each server while dnsperf runs the mix against it
// alone, and says where the time went.
func profileAll(ctx context.Context, bin, out, mix string, servers []*coredns.Server) ([]share, error) {
	var shares []share
	for i, s := range servers {
		load := make(chan error, 1)
		go func() { _, err := dnsperf(ctx, mix, configs[i].ip, *profiled+4); load <- err }()
		time.Sleep(2 * time.Second) // past dnsperf's start
		path := filepath.Join(out, fmt.Sprintf("cpu-%d.pprof", i))
		err := profile(ctx, pprofAddrs[s], path, *profiled)
		if lerr := <-load; err == nil {
			err = lerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", configs[i].name, err)
		}
		sh, err := attribute(ctx, bin, path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", configs[i].name, err)
		}
		shares = append(shares, sh)
		fmt.Fprintf(os.Stderr, "profiled %s\n", configs[i].name)
	}
	return shares, nil
}

// shareTable shows where each configuration's CPU went.
func shareTable(shares []share) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | profiled CPU | stack growth (runtime.newstack) | GC | nsguard's own functions | of which the view | any's own function |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|\n")
	for i, s := range shares {
		fmt.Fprintf(&b, "| %s | %v | %s | %s | %s | %s | %s |\n", configs[i].name, s.total.Round(10*time.Millisecond),
			pct(s.stackGrowth), pct(s.gc), pct(s.guard), pct(s.view), pct(s.floor))
	}
	return b.String()
}

// quantile interpolates linearly between the two nearest ranks.
func quantile(v []float64, q float64) float64 {
	v = slices.Sorted(slices.Values(v))
	x := q * float64(len(v)-1)
	lo := int(math.Floor(x))
	if lo+1 >= len(v) {
		return v[lo]
	}
	return v[lo] + (x-float64(lo))*(v[lo+1]-v[lo])
}

func writeCSV(path string, rows []sample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"round", "configuration", "beside", "qps", "completed", "lost", "cpu_us", "cpu_us_per_query", "dnsperf_cpu_us", "steal"})
	for _, s := range rows {
		var beside string
		switch {
		case s.pair < 0: // one after the other
		case s.config == floorConfig:
			beside = configs[s.pair].name
		default:
			beside = configs[floorConfig].name
		}
		w.Write([]string{strconv.Itoa(s.round), configs[s.config].name, beside, fmt.Sprintf("%.1f", s.qps),
			strconv.FormatInt(s.completed, 10), strconv.FormatInt(s.lost, 10),
			strconv.FormatInt(s.cpu.Microseconds(), 10), fmt.Sprintf("%.2f", s.cpuPerQuery()),
			strconv.FormatInt(s.perfCPU.Microseconds(), 10), fmt.Sprintf("%.3f", s.steal)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// report shows that nsguard saw the apexes and that its log stayed quiet, and keeps the logs.
func report(servers []*coredns.Server) error {
	for i, s := range servers {
		if configs[i].nsguard == "" {
			continue
		}
		page, err := s.Scrape()
		if err != nil {
			return err
		}
		for _, l := range strings.Split(page, "\n") {
			if strings.HasPrefix(l, "coredns_nsguard_") {
				fmt.Printf("%s: %s\n", configs[i].name, l)
			}
		}
		fmt.Printf("%s: %d log lines\n", configs[i].name, strings.Count(s.Log(), "plugin/nsguard"))
	}
	for i, s := range servers {
		if err := os.WriteFile(filepath.Join(filepath.Dir(s.Corefile), "coredns.log"), []byte(s.Log()), 0o644); err != nil {
			return fmt.Errorf("%s: %w", configs[i].name, err)
		}
	}
	return nil
}
