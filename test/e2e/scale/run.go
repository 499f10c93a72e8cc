package scale

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/corefiles"
)

// Config is one CoreDNS configuration: the stock kubeadm Corefile, reading the API server
// with a kubeconfig, plus an nsguard block.
type Config struct {
	Name string
	// NSGuard is the nsguard directive with its block, %s standing for the kubeconfig's path;
	// empty for none. The build places the directive in the plugin chain.
	NSGuard string
	// PodsVerified replaces the kubernetes plugin's "pods insecure" with "pods verified",
	// which watches and keeps every Pod.
	PodsVerified bool
}

// scrapeEvery is how often the heap gauge is scraped while a configuration runs: Prometheus's
// usual interval.
const scrapeEvery = 15 * time.Second

// The configurations of the scale issue.
var (
	KubernetesAlone   = Config{Name: "`kubernetes` alone"}
	NSGuard           = Config{Name: "+ bare `nsguard`", NSGuard: "nsguard {\n    kubeconfig %s\n}"}
	NSGuardClientsOff = Config{Name: "+ `nsguard { clients off }`", NSGuard: "nsguard {\n    clients off\n    kubeconfig %s\n}"}
	// NSGuardNothingLive holds nothing of its own: neither Pods nor the live findings' names.
	NSGuardNothingLive = Config{Name: "+ `nsguard { clients off; findings off }`", NSGuard: "nsguard {\n    clients off\n    findings off\n    kubeconfig %s\n}"}
	PodsVerified       = Config{Name: "`kubernetes` with `pods verified`", PodsVerified: true}
)

// Env is where Measure runs a configuration.
type Env struct {
	CP       *cluster.ControlPlane
	Client   kubernetes.Interface // for the churn and probes; nil: Client(CP)
	CoreDNS  string               // the binary, built by coredns.Build
	Dir      string               // each configuration's Corefile and log go in a directory under it
	IP       string               // the loopback address CoreDNS binds, port 53
	AuditLog string               // the API server's audit log (StartControlPlane); empty: no watch counts
	// Corefile is the stock Corefile to run; empty: the suite's kubeadm.Corefile.
	Corefile string
	// Churn is how many ConfigMaps are created and deleted before the restart; 0: 3,000.
	Churn   int
	Workers int           // for the churn; 0: DefaultWorkers
	Timeout time.Duration // for the sync, and again for the relist; 0: 10 minutes
	// Watch is how long after the API server is back the relist's peak is watched at least,
	// every configuration alike: one that settles early must not be spared what grows later,
	// while the heap's goal is still the one the relist set. 0: until settled.
	Watch time.Duration
	// Steady waits, before the churn and the restart, for the collector's first cycle after
	// the sync settled: then every configuration meets the relist under the goal steady state
	// gives, twice what is live, as a cluster's CoreDNS does hours after its start. Without
	// it, one that ran no collection since its sync meets the relist under a goal its sync
	// left, up to 100 MB higher, and the relist may then run no collection at all.
	Steady bool
	// MemoryLimit, when set, is the container's memory limit the configurations are sized
	// to: every CoreDNS runs with GOMEMLIMIT at GoMemLimit of it, as deploy/ sets, and the
	// results say whether its peak stayed under it. The limit itself is not enforced: the
	// peak (VmHWM) is what a container's limit would meet.
	MemoryLimit uint64
	// GCTrace runs every CoreDNS with GODEBUG=gctrace=1, and reads what its collector marked
	// live.
	GCTrace bool
	Logf    Logf
}

// Result is one configuration's figures. Memory is in bytes.
type Result struct {
	Config   string
	Corefile string // as run

	SyncTime    time.Duration // from the process's start to ready (and nsguard's view synced)
	PeakSync    uint64        // VmHWM from start through the sync, once settled
	RSSSync     uint64        // VmRSS after the sync, settled
	AnonSync    uint64        // RssAnon after the sync
	FileSync    uint64        // RssFile after the sync
	HeapInuse   float64       // go_memstats_heap_inuse_bytes after the sync
	HeapAlloc   float64       // go_memstats_heap_alloc_bytes after the sync
	SyncLists   Counts        // LISTs and streaming lists during the sync, by agent and resource
	Watches     Counts        // watches open after the sync, by agent and resource
	ViewMetrics []string      // coredns_nsguard_view_* after the sync

	ChurnTime   time.Duration // writing the ConfigMaps nobody watches
	RestartTime time.Duration // stopping the API server until it is ready again
	RelistTime  time.Duration // from the API server ready again until CoreDNS settled
	PeakRelist  uint64        // VmHWM from after the sync (reset) through the relist
	RSSRelist   uint64        // VmRSS after the relist, settled
	AnonRelist  uint64        // RssAnon after the relist
	HeapRelist  float64       // go_memstats_heap_inuse_bytes after the relist
	MaxHeap     float64       // the highest go_memstats_heap_inuse_bytes sampled (every scrapeEvery), sync and relist
	Relist      Relist

	MemoryLimit uint64  // the limit the run was sized to; 0: none
	GoMemLimit  uint64  // GOMEMLIMIT it ran with; 0: none
	GCSync      GCTrace // the collector through the sync, with GCTrace
	GCRelist    GCTrace // and through the relist
}

// UnderLimit reports whether the peak stayed under the memory limit, when there was one.
func (r Result) UnderLimit() bool { return r.MemoryLimit == 0 || r.Peak() < r.MemoryLimit }

// Peak is the peak resident memory from start through the sync and the relist.
func (r Result) Peak() uint64 { return max(r.PeakSync, r.PeakRelist) }

// Relist is the evidence that the API server restart made CoreDNS relist.
type Relist struct {
	// Observed: the API server refused the old resource version, and every agent and resource
	// CoreDNS watched before the restart sent a LIST or a streaming list after it.
	Observed bool
	Refused  string // the API server's answer to a watch from the resource version before the restart
	OldRV    string
	Requests Counts   // LISTs and streaming lists after the restart, by agent and resource
	Resumed  Counts   // watches after the restart that resumed from a resource version
	Probes   Counts   // LISTs of a few objects after the restart (an API server liveness check)
	Missing  []string // agent and resource that watched before and sent no full-state request after
	// Sequence is, for each agent and resource CoreDNS watched, its requests after the
	// restart, with their response codes: watches refused with 429 while the new caches fill,
	// a watch resumed from the old resource version that ends at once with 200 (the 410 comes
	// inside the watch stream), then a LIST or streaming list.
	Sequence []string
	Log      []string // CoreDNS's log lines about watches, lists or resource versions
}

// CoreDNSAgents are the user agents of CoreDNS's own requests: the kubernetes plugin's and
// nsguard's.
var CoreDNSAgents = []string{"coredns", "coredns-nsguard"}

// Measure runs cfg alone: it starts CoreDNS, waits for the sync, reads its memory; then writes
// the churn, restarts the API server, waits for CoreDNS to relist and settle, and reads its
// memory again. The CoreDNS process is stopped before it returns; its Corefile and log stay in
// a directory under env.Dir.
func Measure(ctx context.Context, env Env, cfg Config) (res Result, err error) {
	env, err = env.defaults()
	if err != nil {
		return Result{}, err
	}
	res.Config = cfg.Name
	dir := filepath.Join(env.Dir, slug(cfg.Name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	var metrics, ready string
	if res.Corefile, metrics, ready, err = env.corefileFor(cfg); err != nil {
		return res, err
	}
	audit := AuditLog{Path: env.AuditLog}
	var begin int64
	if env.AuditLog != "" {
		if begin, err = audit.Offset(); err != nil {
			return res, err
		}
	}

	if env.MemoryLimit > 0 {
		res.MemoryLimit, res.GoMemLimit = env.MemoryLimit, GoMemLimit(env.MemoryLimit)
	}
	start := time.Now()
	srv, err := coredns.StartWithEnv(ctx, env.CoreDNS, dir, env.IP, res.Corefile, metrics, "cluster.local.", env.processEnv())
	if err != nil {
		return res, err
	}
	defer func() {
		if serr := srv.Stop(); serr != nil && err == nil {
			err = serr
		}
		_ = os.WriteFile(filepath.Join(dir, "coredns.log"), []byte(srv.Log()), 0o644)
	}()
	pid := srv.PID()
	heap := func() (float64, error) {
		page, err := srv.Scrape()
		if err != nil {
			return 0, err
		}
		return metric(page, "go_memstats_heap_inuse_bytes")
	}
	// The heap gauge is scraped at Prometheus's usual pace: each scrape is garbage in CoreDNS,
	// and one a second would fill the heap after a relist faster than any cluster does.
	sampler := StartSampler(pid, 50*time.Millisecond, heap, scrapeEvery)
	defer func() {
		if sampler != nil {
			sampler.Stop()
		}
	}()

	// The sync.
	if err := waitSynced(ctx, srv, ready, cfg.NSGuard != "", env.Timeout); err != nil {
		return res, err
	}
	res.SyncTime = time.Since(start)
	env.Logf.printf("%s: synced in %v", cfg.Name, res.SyncTime.Round(10*time.Millisecond))
	if err := settle(ctx, srv, env.Timeout); err != nil {
		return res, err
	}
	m, err := ReadMem(pid)
	if err != nil {
		return res, err
	}
	settled := time.Now()
	res.PeakSync, res.RSSSync, res.AnonSync, res.FileSync = m.HWM, m.RSS, m.Anon, m.File
	page, err := srv.Scrape()
	if err != nil {
		return res, err
	}
	if res.HeapInuse, err = metric(page, "go_memstats_heap_inuse_bytes"); err != nil {
		return res, err
	}
	if res.HeapAlloc, err = metric(page, "go_memstats_heap_alloc_bytes"); err != nil {
		return res, err
	}
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "coredns_nsguard_view_") {
			res.ViewMetrics = append(res.ViewMetrics, l)
		}
	}
	var restartAt int64
	if env.AuditLog != "" {
		if restartAt, err = audit.Offset(); err != nil {
			return res, err
		}
		reqs, err := audit.Since(begin)
		if err != nil {
			return res, err
		}
		res.SyncLists, res.Watches = onlyCoreDNS(FullStates(reqs)), onlyCoreDNS(OpenWatches(reqs))
	}
	env.Logf.printf("%s: after sync VmHWM %s, VmRSS %s, heap in use %s; watches %v", cfg.Name,
		MiB(float64(res.PeakSync)), MiB(float64(res.RSSSync)), MiB(res.HeapInuse), res.Watches)

	if env.Steady {
		if err := waitCollected(ctx, srv, settled, env.Timeout); err != nil {
			return res, err
		}
		if m, err = ReadMem(pid); err != nil {
			return res, err
		}
		res.PeakSync = max(res.PeakSync, m.HWM)
		env.Logf.printf("%s: collected after the sync settled, in %v", cfg.Name, time.Since(settled).Round(time.Second))
	}

	// The relist.
	logAt := len(srv.Log())
	res.GCSync = ReadGCTrace(srv.Log())
	if err := ResetPeak(pid); err != nil {
		return res, err
	}
	if res.Relist.OldRV, err = WatchedResourceVersion(ctx, env.Client); err != nil {
		return res, err
	}
	t := time.Now()
	if err := Churn(ctx, env.Client, env.Churn, env.Workers); err != nil {
		return res, err
	}
	res.ChurnTime = time.Since(t)
	t = time.Now()
	if err := env.CP.RestartAPIServer(ctx); err != nil {
		return res, fmt.Errorf("restarting the API server: %w", err)
	}
	res.RestartTime = time.Since(t)
	t = time.Now()
	refused, rerr := Refused(ctx, env.Client, res.Relist.OldRV, time.Minute)
	if rerr != nil {
		refused = rerr.Error()
	}
	res.Relist.Refused = refused
	if err := waitRelisted(ctx, audit, restartAt, res.Watches, env.Timeout); err != nil {
		env.Logf.printf("%s: %v", cfg.Name, err) // reported as a relist not observed
	}
	if err := settle(ctx, srv, env.Timeout); err != nil {
		return res, err
	}
	res.RelistTime = time.Since(t)
	if rest := env.Watch - time.Since(t); rest > 0 {
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(rest):
		}
	}
	if m, err = ReadMem(pid); err != nil {
		return res, err
	}
	res.PeakRelist, res.RSSRelist, res.AnonRelist = m.HWM, m.RSS, m.Anon
	res.GCRelist = ReadGCTrace(srv.Log()[logAt:])
	if res.HeapRelist, err = heap(); err != nil {
		return res, err
	}
	_, _, res.MaxHeap, _ = sampler.Stop()
	sampler = nil
	if env.AuditLog != "" {
		reqs, err := audit.Since(restartAt)
		if err != nil {
			return res, err
		}
		res.Relist.Requests = onlyCoreDNS(FullStates(reqs))
		res.Relist.Probes = onlyCoreDNS(Probes(reqs))
		res.Relist.Resumed = Counts{}
		for _, r := range reqs {
			if r.Verb == "watch" && !r.SendsInitialEvents() && r.ResourceVersion() != "" && r.ResourceVersion() != "0" && isCoreDNS(r.Agent) {
				res.Relist.Resumed[Key{r.Agent, r.Resource}]++
			}
		}
		res.Relist.Sequence = sequences(reqs, res.Watches)
		for k := range res.Watches {
			if res.Relist.Requests[k] == 0 {
				res.Relist.Missing = append(res.Relist.Missing, k.String())
			}
		}
		slices.Sort(res.Relist.Missing)
	}
	res.Relist.Observed = rerr == nil && len(res.Relist.Missing) == 0 && (env.AuditLog == "" || res.Relist.Requests.Total() > 0)
	for _, l := range strings.Split(srv.Log(), "\n") {
		low := strings.ToLower(l)
		if strings.Contains(low, "resource version") || strings.Contains(low, "resourceversion") || strings.Contains(low, "reflector") ||
			strings.Contains(low, "gone") || (strings.Contains(low, "watch") && strings.Contains(low, "plugin/")) {
			if len(res.Relist.Log) < 20 {
				res.Relist.Log = append(res.Relist.Log, l)
			}
		}
	}
	env.Logf.printf("%s: after relist VmHWM %s (through the sync %s), heap in use %s; relist observed %v: refused %q, full-state requests %v",
		cfg.Name, MiB(float64(res.PeakRelist)), MiB(float64(res.PeakSync)), MiB(res.HeapRelist), res.Relist.Observed, res.Relist.Refused, res.Relist.Requests)
	return res, nil
}

// corefileFor is cfg's Corefile for a CoreDNS of its own, with free addresses for its
// metrics, health and ready plugins; it returns the metrics and ready addresses too.
func (env Env) corefileFor(cfg Config) (corefile, metrics, ready string, err error) {
	addrs, err := coredns.FreeTCPAddrs(3)
	if err != nil {
		return "", "", "", err
	}
	metrics, health, ready := addrs[0], addrs[1], addrs[2]
	corefile, err = env.render(cfg, corefiles.Addrs{Listen: []string{env.IP}, Metrics: metrics, Health: health, Ready: ready})
	return corefile, metrics, ready, err
}

func (env Env) defaults() (Env, error) {
	if env.CP == nil || env.CoreDNS == "" || env.Dir == "" || env.IP == "" {
		return env, errors.New("scale.Env needs CP, CoreDNS, Dir and IP")
	}
	if env.Client == nil {
		cs, err := Client(env.CP)
		if err != nil {
			return env, err
		}
		env.Client = cs
	}
	if env.Corefile == "" {
		root, err := cluster.RepoRoot()
		if err != nil {
			return env, err
		}
		env.Corefile = filepath.Join(root, "test", "e2e", "testdata", "corefiles", "kubeadm.Corefile")
	}
	if env.Churn == 0 {
		env.Churn = 3000
	}
	if env.Workers == 0 {
		env.Workers = DefaultWorkers
	}
	if env.Timeout == 0 {
		env.Timeout = 10 * time.Minute
	}
	return env, nil
}

// render is the stock Corefile with the suite's addresses and cfg's nsguard block, and the
// kubeconfig in the kubernetes block: in a pod the plugin reads the in-cluster configuration.
func (env Env) render(cfg Config, a corefiles.Addrs) (string, error) {
	return env.renderWith(env.CP.Kubeconfig, cfg, a)
}

func (env Env) renderWith(kubeconfig string, cfg Config, a corefiles.Addrs) (string, error) {
	src, err := os.ReadFile(env.Corefile)
	if err != nil {
		return "", err
	}
	guard := cfg.NSGuard
	if strings.Contains(guard, "%s") {
		guard = fmt.Sprintf(guard, kubeconfig)
	}
	text, err := corefiles.Render(string(src), a, guard)
	if err != nil {
		return "", err
	}
	var out []string
	var found, verified bool
	for _, l := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(l)
		if cfg.PodsVerified && trimmed == "pods insecure" {
			l, verified = strings.Replace(l, "pods insecure", "pods verified", 1), true
		}
		out = append(out, l)
		if strings.HasPrefix(trimmed, "kubernetes ") && strings.HasSuffix(trimmed, "{") {
			indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
			out = append(out, indent+"   kubeconfig "+kubeconfig)
			found = true
		}
	}
	if !found {
		return "", fmt.Errorf("%s: no kubernetes block", env.Corefile)
	}
	if cfg.PodsVerified && !verified {
		return "", fmt.Errorf("%s: no \"pods insecure\" to make \"pods verified\"", env.Corefile)
	}
	return strings.Join(out, "\n"), nil
}

// waitSynced waits for the ready plugin's 200 (every plugin that reports readiness is synced)
// and, with nsguard, for coredns_nsguard_view_synced 1 when the metric is there at all.
func waitSynced(ctx context.Context, srv *coredns.Server, ready string, guard bool, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ready+"/ready", nil)
		res, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !guard {
			return res.StatusCode == http.StatusOK, nil
		}
		page, err := srv.Scrape()
		return err == nil && (coredns.ViewSynced(page) || len(coredns.Samples(page, "coredns_nsguard_view_synced")) == 0), nil
	})
	if err != nil {
		return fmt.Errorf("coredns not synced within %v:\n%s", timeout, tail(srv.Log(), 40))
	}
	return nil
}

// waitCollected waits, for up to timeout, until CoreDNS's collector has run after since: the
// runtime forces a cycle when none ran for two minutes.
func waitCollected(ctx context.Context, srv *coredns.Server, since time.Time, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 5*time.Second, timeout, true, func(context.Context) (bool, error) {
		page, err := srv.Scrape()
		if err != nil {
			return false, err
		}
		last, err := metric(page, "go_memstats_last_gc_time_seconds")
		return err == nil && last > float64(since.UnixNano())/1e9, err
	})
	if ctx.Err() == nil && wait.Interrupted(err) {
		return fmt.Errorf("no collection within %v of %v", timeout, since.Format(time.TimeOnly))
	}
	return err
}

// settle waits until CoreDNS has used less than 5% of a core in each of 3 seconds running,
// for up to timeout: the decoding of a list is over, and what it left is what stays.
func settle(ctx context.Context, srv *coredns.Server, timeout time.Duration) error {
	prev, err := srv.CPUTime()
	if err != nil {
		return err
	}
	quiet := 0
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, false, func(context.Context) (bool, error) {
		now, err := srv.CPUTime()
		if err != nil {
			return false, err
		}
		if now-prev < 50*time.Millisecond {
			quiet++
		} else {
			quiet = 0
		}
		prev = now
		return quiet == 3, nil
	})
	if ctx.Err() == nil && wait.Interrupted(err) {
		return fmt.Errorf("coredns still busy after %v", timeout)
	}
	return err
}

// waitRelisted waits until, for every agent and resource in watched, the audit log from
// offset shows a LIST or streaming list and an open watch. Without an audit log it waits 10 s
// (client-go's back-off after a lost API server is below that), and settle does the rest.
func waitRelisted(ctx context.Context, audit AuditLog, offset int64, watched Counts, timeout time.Duration) error {
	if audit.Path == "" {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return nil
		}
	}
	var missing []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		reqs, err := audit.Since(offset)
		if err != nil {
			return false, err
		}
		full, open := FullStates(reqs), OpenWatches(reqs)
		missing = nil
		for k := range watched {
			if full[k] == 0 || open[k] == 0 {
				missing = append(missing, k.String())
			}
		}
		return len(missing) == 0, nil
	})
	if ctx.Err() == nil && wait.Interrupted(err) {
		slices.Sort(missing)
		return fmt.Errorf("no relist and watch after the restart within %v for %s", timeout, strings.Join(missing, ", "))
	}
	return err
}

func isCoreDNS(agent string) bool { return slices.Contains(CoreDNSAgents, agent) }

func onlyCoreDNS(c Counts) Counts {
	out := Counts{}
	for k, n := range c {
		if isCoreDNS(k.Agent) {
			out[k] = n
		}
	}
	return out
}

// metric is the one sample of name on a /metrics page.
func metric(page, name string) (float64, error) {
	s := coredns.Samples(page, name)
	if len(s) != 1 {
		return 0, fmt.Errorf("%d samples of %s on /metrics", len(s), name)
	}
	return s[0].Value, nil
}

// MiB formats bytes in MiB.
func MiB(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

func slug(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// sequences describes, for each key of watched, its requests in reqs in order.
func sequences(reqs []Request, watched Counts) []string {
	by := map[Key][]string{}
	for _, r := range reqs {
		k := Key{r.Agent, r.Resource}
		if _, ok := watched[k]; !ok {
			continue
		}
		var what string
		switch {
		case r.Verb == "list":
			what = "LIST rv=" + r.ResourceVersion()
		case r.SendsInitialEvents():
			what = "streaming list (watch, sendInitialEvents) rv=" + r.ResourceVersion()
		default:
			what = "watch rv=" + r.ResourceVersion()
		}
		if r.Probe() {
			what = "LIST limit=" + r.query().Get("limit") + " (a probe)"
		}
		switch {
		case r.Completed:
			what += fmt.Sprintf(": %d after %v", r.Code, r.End.Sub(r.Start).Round(time.Millisecond))
		default:
			what += ": open"
		}
		by[k] = append(by[k], what)
	}
	var out []string
	for _, k := range slices.SortedFunc(maps.Keys(by), func(a, b Key) int { return strings.Compare(a.String(), b.String()) }) {
		out = append(out, k.String()+": "+strings.Join(by[k], " → "))
	}
	return out
}
