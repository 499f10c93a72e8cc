package clusterview

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime/metrics"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// SyncWait bounds how long Start waits for the view, as the kubernetes plugin waits 5 s;
// nsguard serves anyway and enriches once the view has synced.
const SyncWait = 5 * time.Second

// Config says what the view reads and whom it tells.
type Config struct {
	Client  kubernetes.Interface
	REST    *rest.Config // Client's configuration: with it, Pods are decoded lean off the wire
	Clients bool         // watch Pods, to name the client of a query
	UIDs    bool         // keep Pods' UIDs, for Events
	// PodFieldSelector narrows the Pod watch, e.g. spec.nodeName=NODE for a node-local cache
	// that only its own node's Pods ask; empty: every Pod.
	PodFieldSelector string

	Logger   *klog.Logger     // client-go's messages about the view's own requests
	OnSynced func()           // once, when every source has synced
	OnStale  func(stale bool) // on each change
}

// Run is what a started view has running.
type Run struct {
	ctx     context.Context
	cancel  context.CancelFunc
	factory informers.SharedInformerFactory // nil when the kubernetes plugin's caches are read
	plugin  *pluginCaches                   // the kubernetes plugin's caches; nil with informers of its own
	wg      sync.WaitGroup
}

// Start reads Services, endpoints and Namespaces from ctl, the kubernetes plugin's caches,
// when it is not nil, and otherwise from informers of the view's own; Pods always from a
// watch of its own. With the kubernetes plugin it waits up to SyncWait for the Pods, and
// otherwise up to SyncWait for everything; it never fails: DNS keeps answering with the core
// checks until the view is ready.
func (v *View) Start(ctl Controller) *Run {
	ctx, cancel := context.WithCancel(context.Background())
	if v.cfg.Logger != nil {
		ctx = klog.NewContext(ctx, *v.cfg.Logger)
	}
	r := &Run{ctx: ctx, cancel: cancel}
	v.run = r
	if ctl != nil {
		r.plugin = newPluginCaches(ctl)
		v.services = r.plugin
	} else {
		v.relistHold = 0 // the relists are the view's own, and hold nothing back
		o := newOwned()
		r.factory = v.ownInformers(ctx, o)
		v.services = o
	}
	if v.pods != nil {
		v.watchPods(ctx, r, v.relistHold)
	}

	synced := make(chan struct{})
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		if v.waitSynced(ctx) {
			close(synced)
		}
	}()
	go func() {
		defer r.wg.Done()
		v.probe(ctx)
	}()
	if ctl != nil {
		// The kubernetes plugin starts its caches once nsguard's start-up has returned. The
		// Pods go first, while the heap is small: decoded after the plugin's lists, they would
		// climb to the heap goal those lists set, before a collection, and CoreDNS's peak with
		// it. An answer that fails (stale) ends the wait at once, as SyncWait bounds it.
		if v.pods != nil {
			poll(ctx, func() bool { return v.pods.synced.Load() || v.stale.Load() }, time.After(SyncWait))
		}
		return r
	}
	select {
	case <-synced:
	case <-time.After(SyncWait):
		warnf(slog.String("after", SyncWait.String()), "cluster view not synced; serving with core checks only until it is", "cluster view not synced after %s; serving with core checks only until it is", SyncWait)
	}
	return r
}

// Follow makes a started view read ctl, the caches of the kubernetes plugin that a Corefile
// reload started, from the moment they have synced: until then it reads the caches it read,
// which the old plugin stops updating when the reload is done. Its Pods, their watch and its
// synced state carry on, so a reload lists nothing again and changes no decision. It reports
// false when the view cannot follow ctl: it reads informers of its own, or ctl is nil.
func (v *View) Follow(ctl Controller) bool {
	r := v.run
	if r == nil || r.plugin == nil || ctl == nil {
		return false
	}
	gen := r.plugin.want(ctl)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if poll(r.ctx, ctl.HasSynced, nil) {
			r.plugin.use(gen, ctl)
		}
	}()
	return true
}

// Stop ends every goroutine of the view; a Corefile reload must not leak them.
func (r *Run) Stop() {
	if r == nil {
		return
	}
	r.cancel()
	if r.factory != nil {
		r.factory.Shutdown()
	}
	r.wg.Wait()
}

// waitSynced reports when every source has synced, and whether it did before ctx ended.
func (v *View) waitSynced(ctx context.Context) bool {
	if !poll(ctx, func() bool { return v.services.hasSynced() && (v.pods == nil || v.pods.synced.Load()) }, nil) {
		return false
	}
	v.synced.Store(true)
	if v.cfg.OnSynced != nil {
		v.cfg.OnSynced()
	}
	return true
}

// poll checks ok every 100 ms until it holds or end fires (nil: never), and reports false
// only when ctx ended first.
func poll(ctx context.Context, ok func() bool, end <-chan time.Time) bool {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !ok() {
		select {
		case <-ctx.Done():
			return false
		case <-end:
			return true
		case <-t.C:
		}
	}
	return ctx.Err() == nil
}

// ownInformers runs informers for Services, EndpointSlices and Namespaces, built without
// the namespace index the factory would add: the view keeps its own indexes, and that one
// costs about 5 MB at 70,000 objects.
func (v *View) ownInformers(ctx context.Context, o *owned) informers.SharedInformerFactory {
	f := informers.NewSharedInformerFactoryWithOptions(v.cfg.Client, 0, informers.WithTransform(toSmall))
	all, noIndex := metav1.NamespaceAll, cache.Indexers{}
	synced := []cache.InformerSynced{
		v.handle(f.InformerFor(&corev1.Service{}, func(c kubernetes.Interface, r time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewServiceInformer(c, all, r, noIndex)
		}), func(x any, ok bool) { o.setService(x.(*serviceObj), ok) }),
		v.handle(f.InformerFor(&discovery.EndpointSlice{}, func(c kubernetes.Interface, r time.Duration) cache.SharedIndexInformer {
			return discoveryinformers.NewEndpointSliceInformer(c, all, r, noIndex)
		}), func(x any, ok bool) { o.setSlice(x.(*sliceObj), ok) }),
		v.handle(f.InformerFor(&corev1.Namespace{}, func(c kubernetes.Interface, r time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewNamespaceInformer(c, r, noIndex)
		}), func(x any, ok bool) { o.setNamespace(x.(*namespaceObj), ok) }),
	}
	o.synced = func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}
	f.StartWithContext(ctx)
	return f
}

// handle adds the handler that copies an informer's objects into the view, and reports its
// watch errors. It returns the handler's own HasSynced: the view is complete only once the
// handler has seen every object, which can be a little after the informer's store is.
func (v *View) handle(inf cache.SharedIndexInformer, set func(obj any, present bool)) cache.InformerSynced {
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if err != io.EOF { // a watch that ended normally
			v.answered(ctx, err)
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { set(o, true) },
		UpdateFunc: func(_, o any) { set(o, true) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			set(o, false)
		},
	})
	if err != nil {
		return func() bool { return false } // only after the informer stopped; it was made just now
	}
	return reg.HasSynced
}

// PodsRelistAfter is how long, at least, a relist of Pods waits beside the kubernetes
// plugin; at most twice that, and then for the runtime's next collection. After an API
// server restart every reflector of CoreDNS relists at once: the plugin's lists are what DNS
// answers from, so they go first, and the Pods, the largest list, follow once that garbage
// is gone. The last collection during the plugin's relist marked its old and new objects
// live and set the heap goal to twice that; a Pod stream before the next collection climbs
// to that goal, and CoreDNS's peak with it (50 to 60 MiB at 50,000 Pods). The jitter spreads
// the Pod lists of many replicas. Meanwhile clients are named from the Pods last seen.
const PodsRelistAfter = 30 * time.Second

// CollectionWait bounds the wait for that collection: the runtime forces one every 2
// minutes in a process that allocates too little to need one.
const CollectionWait = 2*time.Minute + 10*time.Second

// SweepWait is how long the relist waits after that collection ends, while the runtime
// sweeps the heap it collected: only swept pages can be reused. A relist that begins at once
// finds few of them free and grows the heap instead, by 48 MiB at 50,000 Pods.
const SweepWait = 2 * time.Second

// gcCycles is how many collections the runtime has completed.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// watchPods runs a reflector straight into the Pod store, with the API server's streamed
// list where it serves one: no full Pod is held past its decoding, and no list of them all.
// A relist waits hold, and up to as long again, when hold is not 0 (holdRelist).
func (v *View) watchPods(ctx context.Context, r *Run, hold time.Duration) {
	lw, expected := v.podListWatch(hold)
	logger := klog.FromContext(ctx)
	refl := cache.NewReflectorWithOptions(lw, expected, v.pods, cache.ReflectorOptions{Name: "nsguard Pods", Logger: &logger})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		refl.RunWithContext(ctx)
	}()
}

// isRelist reports whether a request of the Pod reflector sends the whole state again after
// the first sync: a list, or a watch that starts with every Pod (the streamed list). A watch
// that resumes from a resource version is not one.
func isRelist(synced, isList bool, opts metav1.ListOptions) bool {
	return synced && (isList || opts.SendInitialEvents != nil && *opts.SendInitialEvents)
}

// holdRelist waits between hold and twice hold before a relist of Pods, then for a
// collection that begins after that, up to CollectionWait, then SweepWait; it returns ctx's
// error if ctx ends first.
func (v *View) holdRelist(ctx context.Context, isList bool, opts metav1.ListOptions, hold time.Duration) error {
	if hold <= 0 || !isRelist(v.pods.synced.Load(), isList, opts) {
		return nil
	}
	d := hold + rand.N(hold)
	log.Infof("relisting Pods in %s, after the kubernetes plugin's own lists and the collection that follows them; until then clients are named from the Pods last seen", d.Round(time.Second))
	if err := sleep(ctx, d); err != nil {
		return err
	}
	// A collection that began after this point: one that ends within the first second (a
	// cycle's marking takes well under that) may have begun before it.
	start, n := time.Now(), v.gcCycles()
	if !poll(ctx, func() bool {
		c := v.gcCycles()
		if c > n && time.Since(start) < time.Second {
			n = c
		}
		return c > n
	}, time.After(CollectionWait)) {
		return ctx.Err()
	}
	return sleep(ctx, v.sweepWait)
}

// sleep waits d, and returns ctx's error if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
