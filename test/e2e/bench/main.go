// Command bench is `make bench`: dnsperf against real CoreDNS servers in front of a real
// kube-apiserver, one server per configuration, each measured in rounds side by side with the
// any floor (both under dnsperf at once, so both see the same noisy host), then a CPU profile
// of each alone under the same load.
//
// The cluster holds the incident's objects and 200 more namespaces of 5 ClusterIP Services.
// Two workloads run on it:
//
//   - chain (the default): six Corefiles of the chain alone, without cache, so every query
//     crosses it. The mix (mix.go) is 2,000 distinct questions a pod in new-namespace-1 sends
//     with ndots:5: 45% NXDOMAIN search candidates, 35% Service answers, 10% namespace apexes
//     (A and AAAA), 5% Pod names, 5% SRV.
//   - stock (-workload stock, stock.go): the stock Corefile with cache 30, run as in a pod,
//     asked by several client Pods at once (one dnsperf each, from the Pod's own address),
//     each with its own questions: the everyday mix above, then the incident mix, in which a
//     fifth of the questions are namespace apexes. Nearly every answer comes from the cache,
//     which runs after nsguard, so each held answer still crosses nsguard.
//
// The any plugin, which does nothing with these queries, is the floor of what a plugin in
// front of the next costs: its frame stays on each query's stack while the next one runs.
//
// On 2 cores dnsperf -T 1 takes about 0.4 of a core and keeps 200 queries waiting on
// CoreDNS (0.14 each when two run side by side). -T 2 gave no more QPS and only took CPU
// away from CoreDNS.
package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"maps"
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

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/procfs"
	"golang.org/x/sync/errgroup"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

type config struct {
	name, ip    string
	before      []string // lines before nsguard, such as any
	nsguard     string   // the nsguard block, with %s for the kubeconfig; empty for none
	after       []string
	stock       string // the stock workload: the lines added to the stock Corefile
	refusesApex bool
	against     bool // built from -against's revision
	ownFloor    bool // -floors own: an any that runs beside one configuration only
	// If against: the index of the same configuration of this build; if ownFloor: of the
	// configuration it runs beside. tradeSlots trades their slots.
	twin int
}

// runsNSGuard reports whether c has an nsguard block.
func (c config) runsNSGuard() bool { return c.nsguard != "" || c.stock != "" && c.stock != "any" }

// withModes keeps, of the nsguard configurations of cs, those of the modes listed (-modes),
// and every other configuration.
func withModes(cs []config, list string) ([]config, error) {
	keep := map[string]bool{}
	for _, m := range strings.Split(list, ",") {
		if m != "log" && m != "refuse" {
			return nil, fmt.Errorf("-modes: unknown mode %q: want log, refuse, or both", m)
		}
		keep[m] = true
	}
	return slices.DeleteFunc(slices.Clone(cs), func(c config) bool {
		mode := "log"
		if c.refusesApex {
			mode = "refuse"
		}
		return c.runsNSGuard() && !keep[mode]
	}), nil
}

// configs are the configurations of the workload that runs: chainConfigs or stockConfigs.
// Both start with the one ratios are taken to besides any (kubernetes alone, the stock
// Corefile alone), then the any floor.
var configs = chainConfigs

// chainConfigs are the chain workload: a Corefile of the chain alone, without cache.
var chainConfigs = []config{
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
	workload = flag.String("workload", "chain", "chain: six Corefiles of the chain alone, without cache; stock: the stock Corefile with cache 30, from several client Pods")
	mixes    = flag.String("mixes", "everyday,incident", "the stock workload's mixes, in turn: everyday, incident")
	pods     = flag.Int("client-pods", 4, "the stock workload's client Pods: one dnsperf each, from its own address")
	rounds   = flag.Int("rounds", 60, "interleaved rounds")
	seconds  = flag.Int("seconds", 3, "dnsperf -l per configuration and round")
	// any runs in every pair and stays warm; each other server would otherwise start its
	// turn cold, after the other pairs' turns, and the floor would favour any.
	warm     = flag.Int("warm", 1, "dnsperf -l, unmeasured, against each configuration just before its measured run beside any; 0 for none")
	clients  = flag.Int("clients", 8, "dnsperf -c, shared among the client Pods")
	threads  = flag.Int("threads", 1, "dnsperf -T")
	inflight = flag.Int("outstanding", 200, "dnsperf -q, shared among the client Pods")
	// Without a rate the load is a closed loop: a server that answers more slowly is sent
	// fewer queries and spreads its wake-ups over fewer of them, which moves its CPU per query
	// by more than its own work does. At a fixed rate both servers of a pair answer the same
	// load, as in a cluster, where CoreDNS is rarely saturated.
	rate     = flag.Int("qps", 0, "dnsperf -Q: queries a second sent to each server, shared among the client Pods; 0 for as many as it answers")
	profiled = flag.Int("profile", 20, "seconds of CPU profile per configuration, under dnsperf; 0 for none")
	// Side by side, each configuration runs at the same time as the any floor, so both see
	// the same neighbours and the same steal; one after the other, a round spans 20 seconds.
	sideBySide = flag.Bool("side-by-side", true, "run each configuration beside any, both under dnsperf at once; false: one after the other")
	// A rare loopback drop holds dnsperf busy-waiting at the end for up to -t.
	timeout = flag.Int("timeout", 1, "dnsperf -t, seconds")
	// Each CoreDNS process keeps, for its life, a layout in memory and a starting goroutine stack
	// size the runtime adapted to: two processes of the same Corefile differ by 2% or more for as
	// long as they run, as much as the effects sought. Fresh processes every
	// few rounds make that a spread that more rounds narrow, not a bias that they keep.
	// Each configuration runs right after the run of the one before it in the order, beside the
	// same any; a fixed order keeps those neighbours for the whole run.
	shuffle      = flag.Bool("shuffle", true, "draw the configurations' order afresh every as many rounds as there are configurations, each still rotated through every place")
	restartEvery = flag.Int("restart", 5, "start every server afresh each this many rounds; 0 to keep the first ones for the whole run")
	// Batches of the same code, pooled: nothing is started.
	// Two builds side by side in one run; its rounds.csv pools only with runs of the same -against.
	against = flag.String("against", "", "a git revision: also run each nsguard configuration as built from it, on addresses of its own")
	// A build for the measurement that refuses nothing can still be set against mode log.
	modes = flag.String("modes", "log,refuse", "the nsguard modes whose configurations run: log, refuse, or both")
	// The shared floor is busy in every pair, each other server idles between its turns.
	floors = flag.String("floors", "shared", "shared: one any beside every configuration; own: each configuration beside an any of its own, which idles as it does (not with -against)")
	pool   = flag.String("pool", "", "comma-separated rounds.csv files of earlier side-by-side runs (of -workload's configurations): print their pooled ratios to any, and stop")
)

func main() {
	flag.Parse()
	if err := checkFlags(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	switch *workload {
	case "chain":
	case "stock":
		configs = stockConfigs
	default:
		fmt.Fprintf(os.Stderr, "bench: -workload %q: want chain or stock\n", *workload)
		os.Exit(2)
	}
	var err error
	if configs, err = withModes(configs, *modes); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *against != "" {
		if configs, err = withAgainst(configs, *against); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
	}
	if *floors == "own" {
		if configs, err = withOwnFloors(configs); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
	}
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

// load is one dnsperf: the mix it sends, and from which address ("" for any).
type load struct{ mix, source string }

// batch is one mix as every client sends it.
type batch struct {
	name      string
	questions []question // of the first client, asked once of each server to check its answers
	loads     []load
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
	stock := *workload == "stock"
	name := "bench"
	if stock {
		name = "bench-stock"
	}
	out, err := cluster.FreshOutputDir(root, name)
	if err != nil {
		return err
	}
	batches, err := makeBatches(out, stock)
	if err != nil {
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
	binOf := func(c config) string { return bin }
	if *against != "" {
		other, err := buildAt(ctx, root, out, *against)
		if err != nil {
			return err
		}
		// A file of its own, as the -against build's: no text pages shared with the floor's.
		mine, err := coredns.Build(ctx, root, filepath.Join(out, "this"))
		if err != nil {
			return err
		}
		binOf = func(c config) string {
			switch {
			case c.against:
				return other
			case c.runsNSGuard():
				return mine
			}
			return bin
		}
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

	start := func(c config) (*coredns.Server, error) {
		return startServer(ctx, binOf(c), out, zones, cp.Kubeconfig, c)
	}
	if stock {
		if err := createClients(ctx, cp, stockClients(*pods)); err != nil {
			return err
		}
		env, up, err := stockEnv(ctx, root, bin, out, zones, cp)
		if err != nil {
			return err
		}
		defer up.Stop()
		start = func(c config) (*coredns.Server, error) { return startStock(ctx, root, binOf(c), out, env, c) }
	}
	servers := make([]*coredns.Server, len(configs))
	if err := startAll(servers, start); err != nil {
		return err
	}
	var tables []string
	for _, b := range batches {
		t, err := runBatch(ctx, out, bin, b, servers, start, stock)
		if err != nil {
			return fmt.Errorf("mix %s: %w", b.name, err)
		}
		tables = append(tables, t)
	}
	table := strings.Join(tables, "\n")
	fmt.Print(table)
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

// makeBatches writes the mixes: for the chain workload, the everyday mix of one pod in
// new-namespace-1 (dnsperf's own address names no Pod); for the stock workload, each mix of
// -mixes as each client Pod sends it.
func makeBatches(out string, stock bool) ([]batch, error) {
	if !stock {
		qs := makeMix(everyday, "new-namespace-1", 0)
		path := filepath.Join(out, "querymix.txt")
		return []batch{{name: "everyday", questions: qs, loads: []load{{mix: path}}}}, writeMix(path, qs)
	}
	known := map[string]shares{"everyday": everyday, "incident": incident}
	var out2 []batch
	for _, m := range strings.Split(*mixes, ",") {
		sh, ok := known[m]
		if !ok {
			return nil, fmt.Errorf("-mixes: unknown mix %q: want everyday or incident", m)
		}
		b := batch{name: m}
		for k, p := range stockClients(*pods) {
			qs := makeMix(sh, p.namespace, k)
			path := filepath.Join(out, fmt.Sprintf("querymix-%s-%s.txt", m, p.namespace))
			if err := writeMix(path, qs); err != nil {
				return nil, err
			}
			if k == 0 {
				b.questions = qs
			}
			b.loads = append(b.loads, load{mix: path, source: p.ip})
		}
		out2 = append(out2, b)
	}
	return out2, nil
}

// runBatch checks each server's answers to the mix, warms it up, runs the rounds and the
// profiles, and returns the tables of the batch.
func runBatch(ctx context.Context, out, bin string, b batch, servers []*coredns.Server, start func(config) (*coredns.Server, error), stock bool) (string, error) {
	for i, c := range configs {
		if err := checkMix(b.questions, servers[i], c); err != nil {
			return "", fmt.Errorf("%s: %w", c.name, err)
		}
	}
	if err := warmAll(ctx, b); err != nil {
		return "", err
	}
	how := "one after the other"
	switch {
	case *floors == "own":
		how = "each beside an any of its own (-floors own), slots traded every other set"
	case *sideBySide:
		how = "each beside any"
	}
	if *restartEvery > 0 && *restartEvery < *rounds {
		how = fmt.Sprintf("%s; every server started afresh each %d rounds", how, *restartEvery)
	}
	head := fmt.Sprintf("dnsperf -l %d -c %d -T %d -q %d -t %d, %d rounds, %s", *seconds, *clients, *threads, *inflight, *timeout, *rounds, how)
	if *rate > 0 {
		head = fmt.Sprintf("%s; each server sent %d queries a second (dnsperf -Q)", head, *rate)
	}
	if stock {
		head = fmt.Sprintf("%s Corefile, mix %s from %d client Pods (one dnsperf each; -c and -q shared among them); %s", stockCorefile, b.name, len(b.loads), head)
	}
	fmt.Println(head)
	idle, err := idleCPU(servers, 10*time.Second)
	if err != nil {
		return "", err
	}
	var rows []sample
	for r := range *rounds {
		gen := generation(r)
		if r > 0 && gen != generation(r-1) {
			if err := restartAll(ctx, b, servers, start); err != nil {
				return "", fmt.Errorf("round %d: %w", r, err)
			}
		}
		for _, i := range runOrder(r, len(configs), *shuffle) {
			if !*sideBySide {
				s, err := measure(ctx, b.loads, servers[i:i+1], configs[i].ip)
				if err != nil {
					return "", fmt.Errorf("round %d, %s: %w", r, configs[i].name, err)
				}
				s[0].round, s[0].config, s[0].pair, s[0].generation, s[0].traded = r, i, -1, gen, slotsTraded()
				rows = append(rows, s[0])
				continue
			}
			if isFloor(i) {
				continue // it runs beside the others, or its own
			}
			f := floorOf(i)
			if *warm > 0 {
				if err := warmBeside(ctx, b, i, f); err != nil {
					return "", fmt.Errorf("round %d, warming %s: %w", r, configs[i].name, err)
				}
			}
			// Each server of the pair has its dnsperf started, and its CPU time read, first in
			// every other round.
			pair := []int{i, f}
			if r%2 == 1 {
				pair = []int{f, i}
			}
			s, err := measure(ctx, b.loads, []*coredns.Server{servers[pair[0]], servers[pair[1]]}, configs[pair[0]].ip, configs[pair[1]].ip)
			if err != nil {
				return "", fmt.Errorf("round %d, %s beside any: %w", r, configs[i].name, err)
			}
			for k, c := range pair {
				s[k].round, s[k].config, s[k].pair, s[k].generation, s[k].traded = r, c, i, gen, slotsTraded()
			}
			rows = append(rows, s...)
		}
		fmt.Fprintf(os.Stderr, "%s: round %d/%d done\n", b.name, r+1, *rounds)
	}

	table := head + "\n\n" + summarize(rows, *rounds) + idle
	if *profiled > 0 {
		shares, err := profileAll(ctx, bin, out, b, servers)
		if err != nil {
			return "", err
		}
		table += "\n" + shareTable(shares)
	}
	if *sideBySide {
		ft, err := floorTable(rows)
		if err != nil {
			return "", err
		}
		table += "\n" + ft
		if *against != "" {
			ab, err := abTable(rows)
			if err != nil {
				return "", err
			}
			table += "\n" + ab
		}
	}
	suffix := ""
	if stock {
		suffix = "-" + b.name
	}
	return table, writeCSV(filepath.Join(out, "rounds"+suffix+".csv"), rows, *rate)
}

// setsStarted counts startAll's sets of processes.
var setsStarted int

// trading reports whether the slots of pairs of servers trade (tradeSlots): the two builds'
// with -against, each configuration's and its floor's with -floors own.
func trading() bool { return *against != "" || *floors == "own" }

// slotsTraded reports whether the set of processes running has its slots traded: every
// second one has.
func slotsTraded() bool { return trading() && setsStarted%2 == 0 }

// startAll starts a server for each configuration into servers. With -against or -floors
// own, each set of processes after the first trades the slots again.
func startAll(servers []*coredns.Server, start func(config) (*coredns.Server, error)) error {
	if trading() && setsStarted > 0 {
		tradeSlots(configs)
	}
	setsStarted++
	for _, i := range startOrder(configs) {
		c := configs[i]
		s, err := start(c)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		servers[i] = s
	}
	return nil
}

// warmAll sends each server the mix for two seconds, unmeasured: its cache fills and its
// goroutines and stacks settle as they will under the rounds.
func warmAll(ctx context.Context, b batch) error {
	for _, c := range configs {
		if _, err := dnsperf(ctx, b.loads, c.ip, 2); err != nil {
			return fmt.Errorf("warming %s: %w", c.name, err)
		}
	}
	return nil
}

// restartAll stops every server, all at once (each waits out its lame duck), and starts
// each afresh on its own addresses, synced and warmed as the first ones were.
func restartAll(ctx context.Context, b batch, servers []*coredns.Server, start func(config) (*coredns.Server, error)) error {
	var g errgroup.Group
	for i, s := range servers {
		delete(pprofAddrs, s)
		g.Go(func() error {
			if err := s.Stop(); err != nil {
				return fmt.Errorf("stopping %s: %w", configs[i].name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, s := range servers {
		stoppedLogs[i] += s.Log()
	}
	if err := startAll(servers, start); err != nil {
		return err
	}
	return warmAll(ctx, b)
}

// generation is which set of processes serves round r: each -restart rounds start a new one.
func generation(r int) int {
	if *restartEvery == 0 {
		return 0
	}
	return r / *restartEvery
}

// stoppedLogs holds, by configuration, what its servers stopped by restartAll logged: the
// run's log is theirs and the last server's.
var stoppedLogs = map[int]string{}

// idleCPU says how much CPU each server uses while no query comes, over d, after the
// warm-up: what a server does on its own counts in its CPU per query too.
func idleCPU(servers []*coredns.Server, d time.Duration) (string, error) {
	before, err := cpuTimes(servers)
	if err != nil {
		return "", err
	}
	time.Sleep(d)
	after, err := cpuTimes(servers)
	if err != nil {
		return "", err
	}
	var parts []string
	for i := range servers {
		parts = append(parts, fmt.Sprintf("%s %.1f ms/s", configs[i].name, float64((after[i]-before[i]).Microseconds())/1000/d.Seconds()))
	}
	return fmt.Sprintf("\nCPU while no query comes (%v, after the warm-up): %s.\n", d, strings.Join(parts, ", ")), nil
}

// pprofAddrs are the pprof listeners of the servers.
var pprofAddrs = map[*coredns.Server]string{}

func startServer(ctx context.Context, bin, out, zones, kubeconfig string, c config) (*coredns.Server, error) {
	addrs, err := coredns.FreeTCPAddrs(2)
	if err != nil {
		return nil, err
	}
	metrics, pprofAddr := addrs[0], addrs[1]
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
	generation      int           // which of the run's sets of processes served it (-restart)
	traded          bool          // with -against or -floors own: served with the slots traded
}

// The configurations ratios are taken to.
const (
	baseConfig  = 0 // kubernetes alone, or the stock Corefile alone
	floorConfig = 1 // any
)

func (s sample) cpuPerQuery() float64 {
	return float64(s.cpu.Microseconds()) / float64(s.completed)
}

// measure runs one dnsperf per server, all at once, and reads each server's CPU time
// around them.
func measure(ctx context.Context, loads []load, servers []*coredns.Server, ips ...string) ([]sample, error) {
	before, err := cpuTimes(servers)
	if err != nil {
		return nil, err
	}
	stolen, total, err := stealTime()
	if err != nil {
		return nil, err
	}
	res := make([]sample, len(servers))
	errs := make(chan error, len(servers))
	for i := range servers {
		go func() {
			var err error
			res[i], err = dnsperf(ctx, loads, ips[i], *seconds)
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
	stolen2, total2, err := stealTime()
	if err != nil {
		return nil, err
	}
	after, err := cpuTimes(servers)
	if err != nil {
		return nil, err
	}
	for i := range servers {
		res[i].cpu = after[i] - before[i]
		if total2 > total {
			res[i].steal = (stolen2 - stolen) / (total2 - total)
		}
	}
	return res, nil
}

// cpuTimes reads each server's CPU time.
func cpuTimes(servers []*coredns.Server) ([]time.Duration, error) {
	ts := make([]time.Duration, len(servers))
	for i, s := range servers {
		var err error
		if ts[i], err = s.CPUTime(); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// stealTime reads the machine's steal time and all its CPU time, in seconds, from /proc/stat.
// On a shared host the hypervisor's steal also evicts CoreDNS's caches: it is what makes a
// round swing, so the summary states it.
func stealTime() (steal, total float64, err error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, 0, err
	}
	st, err := fs.Stat()
	if err != nil {
		return 0, 0, err
	}
	c := st.CPUTotal // guest time is in User already
	return c.Steal, c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal, nil
}

var (
	reCompleted = regexp.MustCompile(`Queries completed:\s+(\d+)`)
	reLost      = regexp.MustCompile(`Queries lost:\s+(\d+)`)
	reQPS       = regexp.MustCompile(`Queries per second:\s+([\d.]+)`)
	reRcodes    = regexp.MustCompile(`Response codes:\s+(.*)`)
)

// dnsperf sends loads to ip at once, one dnsperf each, -c and -q shared among them, and adds
// up what they report.
func dnsperf(ctx context.Context, loads []load, ip string, secs int) (sample, error) {
	runs := make([]sample, len(loads))
	errs := make(chan error, len(loads))
	for i, l := range loads {
		go func() {
			var err error
			runs[i], err = dnsperfOne(ctx, l, ip, secs, max(1, *clients/len(loads)), max(1, *inflight/len(loads)), perPod(*rate, len(loads)))
			errs <- err
		}()
	}
	var err error
	for range loads {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	var s sample
	for _, r := range runs {
		s.completed, s.lost, s.qps, s.perfCPU = s.completed+r.completed, s.lost+r.lost, s.qps+r.qps, s.perfCPU+r.perfCPU
		s.wall = max(s.wall, r.wall)
	}
	return s, err
}

// perPod is each client Pod's share of qps queries a second; 0 stays 0, for no limit.
func perPod(qps, pods int) int {
	if qps <= 0 {
		return 0
	}
	return max(1, qps/pods)
}

// dnsperfOne runs one dnsperf; qps 0 sends as fast as the server answers.
func dnsperfOne(ctx context.Context, l load, ip string, secs, clients, inflight, qps int) (sample, error) {
	args := []string{"-s", ip, "-d", l.mix, "-l", strconv.Itoa(secs),
		"-c", strconv.Itoa(clients), "-T", strconv.Itoa(*threads), "-q", strconv.Itoa(inflight), "-t", strconv.Itoa(*timeout)}
	if qps > 0 {
		args = append(args, "-Q", strconv.Itoa(qps))
	}
	if l.source != "" {
		args = append(args, "-a", l.source)
	}
	cmd := exec.CommandContext(ctx, "dnsperf", args...)
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
		return sample{}, fmt.Errorf("dnsperf against %s from %q: %d completed, %d lost", ip, l.source, s.completed, s.lost)
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
		case !isFloor(s.config):
			by[s.config][s.round].s = s
		default:
			by[s.pair][s.round].floor = s
			if s.pair == baseConfig { // any's own figures: from beside kubernetes alone
				by[floorConfig][s.round] = run{s, s}
			}
		}
	}
	var b strings.Builder
	base := configs[baseConfig].name
	fmt.Fprintf(&b, "| configuration | QPS (median) | QPS ratio to %s (median, p25–p75) | CPU µs/query (median) | CPU/query ratio to %s (median, p25–p75) | CPU/query ratio to any (median, p25–p75) |\n", base, base)
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|\n")
	iqr := func(v []float64) string {
		return fmt.Sprintf("%.3f (%.3f–%.3f)", quantile(v, .5), quantile(v, .25), quantile(v, .75))
	}
	for i, c := range configs {
		if c.ownFloor && i != floorConfig {
			continue // beside one configuration: in its ratio to any
		}
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
func profileAll(ctx context.Context, bin, out string, b batch, servers []*coredns.Server) ([]share, error) {
	var shares []share
	for i, s := range servers {
		load := make(chan error, 1)
		go func() { _, err := dnsperf(ctx, b.loads, configs[i].ip, *profiled+4); load <- err }()
		time.Sleep(2 * time.Second) // past dnsperf's start
		path := filepath.Join(out, fmt.Sprintf("cpu-%s-%d.pprof", b.name, i))
		before, err := requests(s)
		if err == nil {
			err = fetchProfile(ctx, pprofAddrs[s], path, *profiled)
		}
		after, serr := requests(s)
		if lerr := <-load; err == nil {
			err = cmp.Or(serr, lerr)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", configs[i].name, err)
		}
		sh, err := attribute(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", configs[i].name, err)
		}
		sh.queries = after - before
		shares = append(shares, sh)
		fmt.Fprintf(os.Stderr, "profiled %s\n", configs[i].name)
	}
	return shares, nil
}

// shareTable shows where each configuration's CPU went, and its CPU per query in the profile:
// the profiles run one server at a time, so that figure is not a ratio to any beside it.
func shareTable(shares []share) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| configuration | profiled CPU | queries answered | CPU µs/query | stack growth (runtime.newstack) | GC | nsguard's own functions | of which the view | any's own function |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, s := range shares {
		perQuery := "-"
		if s.queries > 0 {
			perQuery = fmt.Sprintf("%.1f", float64(s.total.Microseconds())/s.queries)
		}
		fmt.Fprintf(&b, "| %s | %v | %.0f | %s | %s | %s | %s | %s | %s |\n", configs[i].name, s.total.Round(10*time.Millisecond),
			s.queries, perQuery, pct(s.stackGrowth), pct(s.gc), pct(s.guard), pct(s.view), pct(s.floor))
	}
	b.WriteString(partTable(shares))
	return b.String()
}

// partTable splits nsguard's own time into its parts, in µs a query, beside any's own: a
// part's share of one profile is too small to read, its time a query is what the floor
// compares with.
func partTable(shares []share) string {
	var b strings.Builder
	for i, s := range shares {
		if s.queries == 0 || s.guard == 0 && s.floor == 0 {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "\n| configuration | any's own, µs/query | nsguard's own, µs/query |")
			for _, n := range partNames {
				fmt.Fprintf(&b, " %s |", n)
			}
			fmt.Fprintf(&b, "\n|---|---:|---:|%s\n", strings.Repeat("---:|", len(partNames)))
		}
		us := func(f float64) string { return fmt.Sprintf("%.3f", f*float64(s.total.Microseconds())/s.queries) }
		fmt.Fprintf(&b, "| %s | %s | %s |", configs[i].name, us(s.floor), us(s.guard))
		for _, p := range s.parts {
			fmt.Fprintf(&b, " %s |", us(p))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// scrape reads s's /metrics page into its metric families.
func scrape(s *coredns.Server) (map[string]*dto.MetricFamily, error) {
	page, err := s.Scrape()
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("/metrics: %w", err)
	}
	return families, nil
}

// requests is how many queries s has been asked, from its metrics.
func requests(s *coredns.Server) (float64, error) {
	families, err := scrape(s)
	if err != nil {
		return 0, err
	}
	var n float64
	for _, m := range families["coredns_dns_requests_total"].GetMetric() {
		n += m.GetCounter().GetValue()
	}
	return n, nil
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

func writeCSV(path string, rows []sample, qps int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"round", "configuration", "beside", "qps", "completed", "lost", "cpu_us", "cpu_us_per_query", "dnsperf_cpu_us", "steal", "qps_limit", "generation", "slots_traded"})
	for _, s := range rows {
		var beside string
		switch {
		case s.pair < 0: // one after the other
		case isFloor(s.config):
			beside = configs[s.pair].name
		default:
			beside = configs[floorOf(s.config)].name
		}
		w.Write([]string{strconv.Itoa(s.round), configs[s.config].name, beside, fmt.Sprintf("%.1f", s.qps),
			strconv.FormatInt(s.completed, 10), strconv.FormatInt(s.lost, 10),
			strconv.FormatInt(s.cpu.Microseconds(), 10), fmt.Sprintf("%.2f", s.cpuPerQuery()),
			strconv.FormatInt(s.perfCPU.Microseconds(), 10), fmt.Sprintf("%.3f", s.steal), strconv.Itoa(qps), strconv.Itoa(s.generation), strconv.FormatBool(s.traded)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// report shows that nsguard saw the apexes and that its log stayed quiet, and keeps the logs.
// The counters are the last server's, started at the last restart; the log is the whole run's.
func report(servers []*coredns.Server) error {
	for i, s := range servers {
		if !configs[i].runsNSGuard() {
			continue
		}
		families, err := scrape(s)
		if err != nil {
			return fmt.Errorf("%s: %w", configs[i].name, err)
		}
		for _, name := range slices.Sorted(maps.Keys(families)) {
			if !strings.HasPrefix(name, "coredns_nsguard_") {
				continue
			}
			for _, m := range families[name].GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
				fmt.Printf("%s: %s{%s} %g\n", configs[i].name, name, strings.Join(labels, ","), v)
			}
		}
		fmt.Printf("%s: %d log lines\n", configs[i].name, strings.Count(stoppedLogs[i]+s.Log(), "plugin/nsguard"))
	}
	for i, s := range servers {
		if err := os.WriteFile(filepath.Join(filepath.Dir(s.Corefile), "coredns.log"), []byte(stoppedLogs[i]+s.Log()), 0o644); err != nil {
			return fmt.Errorf("%s: %w", configs[i].name, err)
		}
	}
	return nil
}
