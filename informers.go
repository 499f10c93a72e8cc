package nsguard

import (
	"context"
	"time"

	"k8s.io/client-go/informers"
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
	viewSynced.Set(0)
	w.factory = informers.NewSharedInformerFactoryWithOptions(w.client, 0, informers.WithTransform(toSmall))

	v := w.view
	synced := []cache.InformerSynced{
		w.watch(w.factory.Core().V1().Namespaces().Informer(), func(o any, ok bool) { v.setNamespace(o.(*namespaceObj), ok) }),
		w.watch(w.factory.Core().V1().Services().Informer(), func(o any, ok bool) { v.setService(o.(*serviceObj), ok) }),
		w.watch(w.factory.Discovery().V1().EndpointSlices().Informer(), func(o any, ok bool) { v.setSlice(o.(*sliceObj), ok) }),
	}
	if w.clients {
		synced = append(synced, w.watch(w.factory.Core().V1().Pods().Informer(), func(o any, ok bool) { v.setPod(o.(*podObj), ok) }))
	}
	w.factory.StartWithContext(ctx)

	go func() {
		defer close(w.done)
		if cache.WaitForCacheSync(ctx.Done(), synced...) {
			v.synced.Store(true)
			viewSynced.Set(1)
		}
	}()

	wait, stop := context.WithTimeout(ctx, syncWait)
	defer stop()
	for !v.synced.Load() && wait.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	if !v.synced.Load() {
		log.Warningf("cluster view not synced after %s; serving with core checks only until it is", syncWait)
	}
	return nil
}

// watch adds the handler that copies an informer's objects into the view.
func (w *watcher) watch(inf cache.SharedIndexInformer, set func(obj any, present bool)) cache.InformerSynced {
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { set(o, true) },
		UpdateFunc: func(_, o any) { set(o, true) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			set(o, false)
		},
	})
	return inf.HasSynced
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
