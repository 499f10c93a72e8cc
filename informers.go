package nsguard

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// syncWait bounds how long start-up waits for the view, as the kubernetes plugin waits 5 s;
// nsguard serves anyway and enriches once the view has synced.
const syncWait = 5 * time.Second

// watcher keeps a view up to date from the API server with shared informers.
type watcher struct {
	client  kubernetes.Interface
	view    *view
	clients bool // watch Pods, to name the client of a query
	uids    bool // keep Pods' UIDs, for Events

	cancel  context.CancelFunc
	factory informers.SharedInformerFactory
	done    chan struct{}
}

// start runs the informers and waits up to syncWait for them to sync. It never fails the
// server: DNS keeps answering with the core checks until the view is ready.
func (w *watcher) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done = make(chan struct{})
	for _, s := range w.view.servers {
		viewSynced.WithLabelValues(s).Set(0)
		viewStale.WithLabelValues(s).Set(0)
		viewStaleDecisions.WithLabelValues(s) // at 0 from the start, so that rates and alerts see it
	}
	transform := toSmall
	if w.uids {
		transform = toSmallWithUIDs
	}
	w.factory = informers.NewSharedInformerFactoryWithOptions(w.client, 0, informers.WithTransform(transform))

	// The informers are built without the namespace index the factory would add: the view
	// keeps its own indexes, and that one costs about 5 MB at 70,000 objects.
	v, all := w.view, metav1.NamespaceAll
	noIndex := cache.Indexers{}
	synced := []cache.InformerSynced{
		w.watch(w.factory.InformerFor(&corev1.Service{}, func(c kubernetes.Interface, r time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewServiceInformer(c, all, r, noIndex)
		}), func(o any, ok bool) { v.setService(o.(*serviceObj), ok) }),
		w.watch(w.factory.InformerFor(&discovery.EndpointSlice{}, func(c kubernetes.Interface, r time.Duration) cache.SharedIndexInformer {
			return discoveryinformers.NewEndpointSliceInformer(c, all, r, noIndex)
		}), func(o any, ok bool) { v.setSlice(o.(*sliceObj), ok) }),
	}
	if w.clients {
		synced = append(synced, w.watch(w.factory.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, r time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewPodInformer(c, all, r, noIndex)
		}), func(o any, ok bool) { v.setPod(o.(*podObj), ok) }))
	}
	w.factory.StartWithContext(ctx)

	go func() {
		defer close(w.done)
		if cache.WaitForCacheSync(ctx.Done(), synced...) {
			v.setSynced()
		}
	}()

	select {
	case <-w.done: // synced
	case <-time.After(syncWait):
		log.Warningf("cluster view not synced after %s; serving with core checks only until it is", syncWait)
	}
	return nil
}

// watch adds the handler that copies an informer's objects into the view. It returns the
// handler's own HasSynced: the view is complete only once the handler has seen every object,
// which can be a little after the informer's store is.
func (w *watcher) watch(inf cache.SharedIndexInformer, set func(obj any, present bool)) cache.InformerSynced {
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
		return func() bool { return false } // only after the informer stopped; start made it just now
	}
	return reg.HasSynced
}

// stop ends every informer goroutine; a Corefile reload must not leak them.
func (w *watcher) stop() error {
	if w.cancel == nil {
		return nil
	}
	w.cancel()
	w.factory.Shutdown()
	<-w.done
	return nil
}
