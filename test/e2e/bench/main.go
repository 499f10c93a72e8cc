// Command bench is `make bench`: dnsperf against real CoreDNS servers in front of a real
// kube-apiserver, one server per configuration, measured in interleaved rounds.
//
// querymix.txt is what a pod in new-namespace-1 sends with ndots:5 and the search list
// new-namespace-1.svc.cluster.local svc.cluster.local cluster.local corp.example, A and AAAA
// for each candidate until one answers. 100 queries from 17 lookups:
//
//	9 × my-app.new-namespace-2                    candidate 2 is the Service
//	2 × my-app.new-namespace-2.svc                candidate 3 is the Service
//	2 × my-app.new-namespace-2.svc.cluster.local  4 candidates, then the name as typed
//	4 × my-app                                    NXDOMAIN, namespace apex, NXDOMAIN, my-app.corp.example
//
// Shares, checked against the kubernetes-alone server before measuring (mixWant):
// 58% NXDOMAIN (54 in cluster.local), 26% Service (A and its NODATA AAAA),
// 8% namespace apex (NODATA), 8% external (my-app.corp.example).
//
// No server has cache, so every query crosses the chain. On 2 cores dnsperf -T 1 takes
// about 0.4 of a core and keeps 200 queries waiting on CoreDNS. -T 2 gave no more QPS and
// only took CPU away from CoreDNS.
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

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

type config struct {
	name, ip string
	mode     string // nsguard's mode; empty for no nsguard
	after    []string
	apex     string // what a namespace apex question gets: "apex" (NODATA passes) or "nxdomain"
}

var configs = []config{
	{name: "kubernetes alone", ip: "127.53.10.1", apex: "apex"},
	{name: "nsguard, mode log", ip: "127.53.10.2", mode: "log", apex: "apex"},
	{name: "nsguard, mode refuse", ip: "127.53.10.3", mode: "refuse", apex: "nxdomain"},
	// The workaround in use today. fallthrough: every other name must reach kubernetes.
	{name: "template NXDOMAIN workaround", ip: "127.53.10.4", apex: "nxdomain", after: []string{
		"template IN ANY cluster.local {",
		`    match "^[^.]+[.]svc[.]cluster[.]local[.]$"`,
		"    rcode NXDOMAIN",
		"    fallthrough",
		"}",
	}},
}

// mixWant is querymix.txt's classification as the kubernetes plugin answers it.
var mixWant = map[string]int{"nxdomain": 58, "service": 26, "apex": 8, "external": 8}

var (
	rounds   = flag.Int("rounds", 30, "interleaved rounds")
	seconds  = flag.Int("seconds", 3, "dnsperf -l per configuration and round")
	clients  = flag.Int("clients", 8, "dnsperf -c")
	threads  = flag.Int("threads", 1, "dnsperf -T")
	inflight = flag.Int("outstanding", 200, "dnsperf -q")
	// A rare loopback drop holds dnsperf busy-waiting at the end for up to -t.
	timeout = flag.Int("timeout", 1, "dnsperf -t, seconds")
)

func main() {
	flag.Parse()
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
	out := filepath.Join(root, "bin", "bench")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	mix := filepath.Join(root, "test", "e2e", "bench", "querymix.txt")
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
		if err := checkMix(mix, servers[i], c); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if _, err := dnsperf(ctx, mix, c.ip, 2); err != nil { // warm up
			return err
		}
	}

	fmt.Printf("dnsperf -l %d -c %d -T %d -q %d -t %d, %d rounds\n", *seconds, *clients, *threads, *inflight, *timeout, *rounds)
	var rows []sample
	for r := range *rounds {
		for k := range configs {
			i := (r + k) % len(configs) // rotate who goes first
			s, err := measure(ctx, mix, servers[i], configs[i].ip)
			if err != nil {
				return fmt.Errorf("round %d, %s: %w", r, configs[i].name, err)
			}
			s.round, s.config = r, i
			rows = append(rows, s)
		}
		fmt.Fprintf(os.Stderr, "round %d/%d done\n", r+1, *rounds)
	}

	table := summarize(rows, *rounds)
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

func startServer(ctx context.Context, bin, out, zones, kubeconfig string, c config) (*coredns.Server, error) {
	metrics, err := coredns.FreeTCPAddr()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(out, c.ip)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cf := coredns.Config{IP: c.ip, Kubeconfig: kubeconfig, Metrics: metrics, ZoneDir: zones, After: c.after}
	if c.mode != "" {
		// kubeconfig turns the cluster view on, as running in a pod does.
		cf.NSGuard = fmt.Sprintf("nsguard {\n        mode %s\n        kubeconfig %s\n    }", c.mode, kubeconfig)
	}
	s, err := coredns.Start(ctx, bin, dir, c.ip, cf.Corefile(), metrics, "cluster.local")
	if err != nil || c.mode == "" {
		return s, err
	}
	return s, s.WaitViewSynced(ctx) // every round measures the view
}

// checkMix asks every line of the mix once and compares the classes with mixWant, where
// a configuration that refuses apexes turns them into NXDOMAIN.
func checkMix(mix string, s *coredns.Server, c config) error {
	b, err := os.ReadFile(mix)
	if err != nil {
		return err
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || dns.StringToType[f[1]] == 0 {
			return fmt.Errorf("bad query line %q", line)
		}
		m, err := s.Exchange(f[0], dns.StringToType[f[1]])
		if err != nil {
			return err
		}
		got[class(f[0], m)]++
	}
	want := map[string]int{}
	for k, v := range mixWant {
		if k == "apex" {
			k = c.apex
		}
		want[k] += v
	}
	fmt.Printf("%-28s mix as answered: %v\n", c.name, got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("query mix answered as %v, want %v", got, want)
	}
	return nil
}

var apexName = regexp.MustCompile(`^[^.]+\.svc\.cluster\.local\.$`)

func class(name string, m *dns.Msg) string {
	name = dns.Fqdn(name)
	switch {
	case m.Rcode == dns.RcodeNameError:
		return "nxdomain"
	case m.Rcode != dns.RcodeSuccess:
		return dns.RcodeToString[m.Rcode]
	case apexName.MatchString(name):
		return "apex"
	case strings.HasSuffix(name, ".svc.cluster.local."):
		return "service"
	case !dns.IsSubDomain("cluster.local.", name):
		return "external"
	}
	return "other"
}

type sample struct {
	round, config   int
	qps             float64
	completed, lost int64
	cpu, perfCPU    time.Duration // CoreDNS's and dnsperf's CPU time
	wall            time.Duration // dnsperf's run, a little over -l
}

func (s sample) cpuPerQuery() float64 {
	return float64(s.cpu.Microseconds()) / float64(s.completed)
}

// measure runs dnsperf once and reads the server's CPU time around it.
func measure(ctx context.Context, mix string, s *coredns.Server, ip string) (sample, error) {
	before, err := s.CPUTime()
	if err != nil {
		return sample{}, err
	}
	res, err := dnsperf(ctx, mix, ip, *seconds)
	if err != nil {
		return sample{}, err
	}
	after, err := s.CPUTime()
	if err != nil {
		return sample{}, err
	}
	res.cpu = after - before
	return res, nil
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
// kubernetes alone (config 0), measured in the same round.
func summarize(rows []sample, n int) string {
	by := make([][]sample, len(configs))
	for _, s := range rows {
		by[s.config] = append(by[s.config], s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | QPS (median) | QPS ratio (median, p25–p75) | CPU µs/query (median) | CPU ratio (median, p25–p75) |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|\n")
	for i, c := range configs {
		var qps, cpu, qr, cr []float64
		for r := range n {
			s, base := by[i][r], by[0][r]
			qps, cpu = append(qps, s.qps), append(cpu, s.cpuPerQuery())
			qr = append(qr, s.qps/base.qps)
			cr = append(cr, s.cpuPerQuery()/base.cpuPerQuery())
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.3f (%.3f–%.3f) | %.1f | %.3f (%.3f–%.3f) |\n", c.name,
			quantile(qps, .5), quantile(qr, .5), quantile(qr, .25), quantile(qr, .75),
			quantile(cpu, .5), quantile(cr, .5), quantile(cr, .25), quantile(cr, .75))
	}
	var core, perf []float64
	for _, s := range rows {
		core, perf = append(core, s.cpu.Seconds()/s.wall.Seconds()), append(perf, s.perfCPU.Seconds()/s.wall.Seconds())
	}
	fmt.Fprintf(&b, "\nCPU busy (median of runs): CoreDNS %.2f cores, dnsperf %.2f cores.\n", quantile(core, .5), quantile(perf, .5))
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
	w.Write([]string{"round", "configuration", "qps", "completed", "lost", "cpu_us", "cpu_us_per_query", "dnsperf_cpu_us"})
	for _, s := range rows {
		w.Write([]string{strconv.Itoa(s.round), configs[s.config].name, fmt.Sprintf("%.1f", s.qps),
			strconv.FormatInt(s.completed, 10), strconv.FormatInt(s.lost, 10),
			strconv.FormatInt(s.cpu.Microseconds(), 10), fmt.Sprintf("%.2f", s.cpuPerQuery()),
			strconv.FormatInt(s.perfCPU.Microseconds(), 10)})
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
		if configs[i].mode == "" {
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
