package nsguard

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes"

	"k8s.io/klog/v2"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/clusterview"
	"github.com/nsguard/nsguard/events"
	"github.com/nsguard/nsguard/findings"
)

// block is what one nsguard server block runs beside its queries, and keeps across Corefile
// reloads: its cluster view (with its Pods and synced state), its Events worker, its live
// findings' book, and the client_namespace values its servers gave out. A reload starts the
// new instance before it stops the old one: the new instance takes the block over at its
// start-up, reusing what it can, and the old one's shutdown hands it on. So a reload lists no
// Pod again and changes no decision, and only the last instance of a block stops its parts.
type block struct {
	key    string
	labels *namespaceLabels

	// Under blocks.mu.
	owner, next  *NSGuard // the instance that runs the block; a reload's, until the owner stops
	cur, pending *parts   // what each runs
}

// parts are what one instance of a block runs beside its queries. Two instances share a part
// when a reload hands it over.
type parts struct {
	servers []string // the server labels of the block's addresses
	view    *viewRun // nil without a cluster view
	ctl     clusterview.Controller
	events  *events.Worker // nil unless Events are on
	evKey   eventsKey
	live    *findings.Live // nil with findings off
	book    *findings.Book
	advise  func(events.Offer) clusterdns.ApexFix
}

// viewRun is a started cluster view and what it was built from: a reload hands it over only
// if it reads the same cluster the same way.
type viewRun struct {
	key  viewKey
	view *clusterview.View
	run  *clusterview.Run
}

type viewKey struct {
	kubeconfig, context, endpoint string
	podSelector                   string // of the Pods watched, e.g. spec.nodeName=NODE
	clients, uids                 bool
	shared                        bool // reads the kubernetes plugin's caches
}

type eventsKey struct {
	view     *viewRun
	interval string
}

// blocks are the nsguard server blocks of this process, by key: the one state of nsguard's
// that outlives an instance, so that a reload can hand it over. Starting and stopping parts
// happens outside its lock: a view's callbacks take it.
var blocks = struct {
	mu sync.Mutex
	m  map[string]*block
}{m: map[string]*block{}}

// blockKey names a server block across reloads: its keys (zones and port) and its view's
// name, which together tell it from every other block of the Corefile.
func blockKey(keys []string, view string) string {
	return strings.Join(keys, " ") + " view " + view
}

// start takes the block over for g at start-up: its first instance makes every part, a
// reload's reuses the view and Events worker of the instance before when they read the same
// cluster the same way, and always the findings' book.
func (g *NSGuard) start(conf *dnsserver.Config, keys []string, cfg config, client *kubeClient) error {
	if g.zones == nil {
		zones, err := clusterZones(conf.Handler("kubernetes"), keys)
		if err != nil {
			return plugin.Error(pluginName, err)
		}
		g.setZones(zones)
	}
	g.traced = conf.Handler("trace") != nil
	msg := "no cluster view: core checks only"
	if client != nil {
		msg = "with a cluster view"
	}
	log.Infof("guarding %s in mode %s, %s", strings.Join(g.zones, " "), g.mode, msg)

	key := blockKey(keys, conf.ViewName)
	blocks.mu.Lock()
	b := blocks.m[key]
	if b == nil {
		b = &block{key: key, labels: &namespaceLabels{}}
		blocks.m[key] = b
	}
	cur := b.cur
	blocks.mu.Unlock()
	g.block, g.counters.labels = b, b.labels

	p := &parts{servers: serverAddrs(conf), advise: g.adviseEvent}
	if client != nil {
		// Found at start-up: every plugin of the block has been set up by then.
		p.ctl = kubernetesController(conf.Handler("kubernetes"))
		p.view = b.viewFor(cur, viewKey{kubeconfig: cfg.kubeconfig, context: cfg.kubeContext, endpoint: cfg.endpoint,
			podSelector: cfg.podSelector, clients: cfg.clients, uids: cfg.events > 0, shared: p.ctl != nil}, client, p.ctl)
		g.view = p.view.view
		if cfg.events > 0 || cfg.namespaceEvents {
			interval := cfg.events
			if interval == 0 {
				interval = defaultEventInterval
			}
			p.evKey = eventsKey{view: p.view, interval: interval.String()}
			if cur != nil && cur.events != nil && cur.evKey == p.evKey {
				p.events = cur.events
				p.events.SetAdvise(p.advise)
			} else {
				logger := klog.FromContext(withPluginLogger(context.Background()))
				p.events = events.New(events.Config{Client: client.Interface, View: p.view.view, Interval: interval,
					Advise: p.advise, Dropped: dropEvent, Logger: &logger})
				p.events.Start()
			}
			g.events, g.podEvents = p.events, cfg.events > 0
		}
		if cfg.findings {
			if cur != nil && cur.book != nil {
				p.book = cur.book
			} else {
				p.book = findings.NewBook(func() { refreshGauges(b) })
			}
			p.live = findings.New(p.view.view, p.book, g.findingsConfig(cfg, p))
			p.live.Start() // the book is its alone from now on
		}
	}

	blocks.mu.Lock()
	var abandoned *parts // of a reload's instance that neither took over nor was told it failed
	if b.owner == nil {
		b.owner, b.cur = g, p
	} else {
		abandoned = b.pending
		b.next, b.pending = g, p
	}
	blocks.mu.Unlock()
	abandoned.stopUnless(cur, p)
	refreshGauges(b)
	return nil
}

// viewFor returns the view the instance of parts p reads: the one cur runs when it reads the
// same cluster the same way, else a new one.
func (b *block) viewFor(cur *parts, k viewKey, client *kubeClient, ctl clusterview.Controller) *viewRun {
	if cur != nil && cur.view != nil && cur.view.key == k {
		if !k.shared {
			return cur.view // its informers go on
		}
		if cur.view.view.Follow(ctl) {
			log.Info("cluster view handed over to the new instance: it reads the kubernetes plugin's caches once they have synced, and keeps its Pods")
			return cur.view
		}
	}
	if ctl != nil {
		log.Info("cluster view reads Services, EndpointSlices and Namespaces from the kubernetes plugin's caches")
	} else {
		log.Info("cluster view watches Services, EndpointSlices and Namespaces itself: no kubernetes plugin in this server block")
	}
	logger := klog.FromContext(withPluginLogger(context.Background()))
	refresh := func() { refreshGauges(b) }
	v := clusterview.New(clusterview.Config{
		Client: client.Interface, REST: client.rest, Clients: k.clients, UIDs: k.uids, PodFieldSelector: k.podSelector,
		OnSynced: refresh, OnStale: func(bool) { refresh() }, Logger: &logger,
	})
	return &viewRun{key: k, view: v, run: v.Start(ctl)}
}

// findingsConfig is what the live findings of g's block check, and whom they tell.
func (g *NSGuard) findingsConfig(cfg config, p *parts) findings.Config {
	// Lines of their own limits, so that answer lines and their counts stay as they were.
	limiter := newLogLimiter(cfg.logInterval, cfg.logLimit)
	servers := p.servers
	fc := findings.Config{
		Zones:   g.zones,
		Allowed: cfg.allowNamespaces,
		Allow: func(key []byte) (bool, uint64, uint64, string) {
			ok, held, reason := limiter.allow(key)
			return ok, held.repeats, held.suppressed, reason
		},
		Suppressed: func(reason string) {
			for _, s := range servers {
				logLinesSuppressed.WithLabelValues(s, reason).Inc() // rare: no cached series
			}
		},
	}
	if cfg.namespaceEvents && p.events != nil && len(servers) > 0 {
		w := p.events
		fc.Event = func(f audit.Finding) {
			w.OfferFinding(servers[0], events.NamespaceFinding{Namespace: f.Objects[0].Name, Check: f.Check,
				Severity: string(f.Severity), Message: f.Message, Fix: f.Fix})
		}
	}
	return fc
}

// stop is g's shutdown. When a reload's instance took the block over, g hands it on and stops
// only what that one does not run; when none did (the block is gone from the Corefile, or
// CoreDNS stops), g stops everything and its series go.
func (g *NSGuard) stop() error {
	b := g.block
	if b == nil {
		return nil
	}
	blocks.mu.Lock()
	var old, kept *parts
	switch {
	case b.owner == g && b.next != nil:
		old, kept = b.cur, b.pending
		b.owner, b.cur, b.next, b.pending = b.next, b.pending, nil, nil
	case b.owner == g:
		old = b.cur
		b.owner, b.cur = nil, nil
		delete(blocks.m, b.key)
	case b.next == g: // stopped before the instance it was to take over from
		old, kept = b.pending, b.cur
		b.next, b.pending = nil, nil
	default:
		blocks.mu.Unlock()
		return nil
	}
	blocks.mu.Unlock()
	old.stopUnless(kept)
	if old != nil {
		refreshGauges(b, old.servers...)
	}
	return nil
}

// restartFailed is a reload from g that failed after the new instance took the block over:
// g takes it back, and what the new instance started stops.
func (g *NSGuard) restartFailed() error {
	b := g.block
	if b == nil {
		return nil
	}
	blocks.mu.Lock()
	if b.owner != g || b.next == nil {
		blocks.mu.Unlock()
		return nil
	}
	p, cur := b.pending, b.cur
	b.next, b.pending = nil, nil
	blocks.mu.Unlock()
	p.stopUnless(cur)
	if cur.view != nil && cur.ctl != nil {
		cur.view.view.Follow(cur.ctl)
	}
	if cur.events != nil {
		cur.events.SetAdvise(cur.advise)
	}
	if cur.live != nil {
		cur.live.Take()
	}
	refreshGauges(b, p.servers...)
	return nil
}

// stopUnless stops the parts of p that none of kept runs.
func (p *parts) stopUnless(kept ...*parts) {
	if p == nil {
		return
	}
	runs := func(f func(*parts) bool) bool {
		return slices.ContainsFunc(kept, func(k *parts) bool { return k != nil && f(k) })
	}
	if p.live != nil && !runs(func(k *parts) bool { return k.live == p.live }) {
		p.live.Stop()
	}
	if p.events != nil && !runs(func(k *parts) bool { return k.events == p.events }) {
		p.events.Stop()
	}
	if p.view != nil && !runs(func(k *parts) bool { return k.view == p.view }) {
		p.view.run.Stop()
	}
}

// refreshGauges sets the view and findings gauges of b's servers, and of also (servers a
// block stopped serving), from every block that serves each: with two blocks on one address,
// the view is synced when both are and stale when either is, and the findings are those
// either holds. A server no block with a view serves any more loses its series.
func refreshGauges(b *block, also ...string) {
	blocks.mu.Lock()
	defer blocks.mu.Unlock()
	servers := slices.Clone(also)
	for _, p := range []*parts{b.cur, b.pending} {
		if p != nil {
			servers = append(servers, p.servers...)
		}
	}
	slices.Sort(servers)
	for _, s := range slices.Compact(servers) {
		refreshServer(s)
	}
}

// refreshServer sets the gauges of server s; blocks.mu is held.
func refreshServer(s string) {
	views, synced, stale := 0, true, false
	var books []*findings.Book
	for _, b := range blocks.m {
		p := b.pending // the newer instance's parts tell
		if p == nil {
			p = b.cur
		}
		if p == nil || p.view == nil || !slices.Contains(p.servers, s) {
			continue
		}
		views++
		synced = synced && p.view.view.Synced()
		stale = stale || p.view.view.Stale()
		if p.book != nil {
			books = append(books, p.book)
		}
	}
	// The findings' series come with the first look, as nsguard audit's would: at 0 before
	// it, a dashboard would read the time a view takes to sync as no findings.
	books = slices.DeleteFunc(books, func(b *findings.Book) bool { return !b.Looked() })
	if views == 0 {
		viewSynced.DeleteLabelValues(s)
		viewStale.DeleteLabelValues(s)
		findingsHeld.DeletePartialMatch(map[string]string{"server": s})
		return
	}
	viewSynced.WithLabelValues(s).Set(gaugeValue(synced))
	viewStale.WithLabelValues(s).Set(gaugeValue(stale))
	viewStaleDecisions.WithLabelValues(s) // at 0 from the start, so that rates and alerts see it
	if len(books) == 0 {
		findingsHeld.DeletePartialMatch(map[string]string{"server": s})
		return
	}
	held := map[[2]string]audit.Severity{} // owner and check → severity: a finding two books hold counts once
	for _, book := range books {
		book.Each(func(owner, check string, sev audit.Severity) { held[[2]string{owner, check}] = sev })
	}
	counts := map[[2]string]int{}
	for _, cs := range findings.Severities {
		counts[[2]string{cs.Check, string(cs.Severity)}] = 0
	}
	for k, sev := range held {
		counts[[2]string{k[1], string(sev)}]++
	}
	for k, n := range counts {
		findingsHeld.WithLabelValues(s, k[0], k[1]).Set(float64(n))
	}
}

func gaugeValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// dropEvent counts an Event the worker did not write.
func dropEvent(server, reason string) { eventDrops.get(serverLabels{server, reason}).Inc() }

// kubernetesController is the kubernetes plugin's cache of the cluster, or nil without one.
func kubernetesController(h plugin.Handler) clusterview.Controller {
	if k, ok := h.(*kubernetes.Kubernetes); ok && k.APIConn != nil {
		return k.APIConn
	}
	return nil
}
