package clusterview

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/nsguard/nsguard/clusterview/leanpod"
)

// podClient lists and watches Pods, decoded lean (leanpod): protobuf as the API server sends
// it, JSON as a proxy in front of it may.
type podClient struct{ rest rest.Interface }

// newPodClient returns nil without a configuration: a fake clientset has none.
func newPodClient(base *rest.Config) (*podClient, error) {
	if base == nil {
		return nil, nil
	}
	c := rest.CopyConfig(base)
	c.APIPath = "/api"
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.ContentType, c.AcceptContentTypes = leanpod.ContentType, leanpod.Accept
	c.NegotiatedSerializer = leanpod.Codecs
	r, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &podClient{r}, nil
}

func (c *podClient) list(ctx context.Context, opts metav1.ListOptions) (*leanpod.PodList, error) {
	res := c.rest.Get().Resource("pods").VersionedParams(&opts, leanpod.ParameterCodec).
		Timeout(timeoutOf(opts)).Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	l := &leanpod.PodList{}
	if err := res.Into(l); err != nil {
		return nil, unreadable{err}
	}
	return l, nil
}

func (c *podClient) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	w, err := c.rest.Get().Resource("pods").VersionedParams(&opts, leanpod.ParameterCodec).
		Timeout(timeoutOf(opts)).Watch(ctx)
	if errors.As(err, new(runtime.NegotiateError)) { // an answer in a form client-go cannot stream
		err = unreadable{err}
	}
	return w, err
}

func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// unreadable is an answer the view could not decode: the API server, or something between it
// and CoreDNS, sent Pods that client-go's decoder would not read either.
type unreadable struct{ error }

func (u unreadable) Unwrap() error { return u.error }

// podListWatch is what the Pod reflector lists and watches with, and the type of the Pods it
// hands over: lean through the view's own client when it has a configuration, and in full
// through the clientset otherwise. Every answer marks the view stale or fresh (answered), and
// relists wait hold beside the kubernetes plugin (holdRelist).
func (v *View) podListWatch(hold time.Duration) (cache.ListerWatcher, runtime.Object) {
	var list cache.ListWithContextFunc
	var watchFunc cache.WatchFuncWithContext
	var expected runtime.Object
	c, err := newPodClient(v.cfg.REST)
	if err != nil {
		warnErr("Pods decoded in full, which costs more memory", err)
	}
	if c != nil {
		list = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return c.list(ctx, opts) }
		watchFunc, expected = c.watch, &leanpod.Pod{}
	} else {
		pods := v.cfg.Client.CoreV1().Pods(metav1.NamespaceAll)
		list = func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, opts)
		}
		watchFunc, expected = pods.Watch, &corev1.Pod{}
	}
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = v.cfg.PodFieldSelector
			// The list that follows a refused streamed list has waited already.
			if !v.streamRefused.Swap(false) {
				if err := v.holdRelist(ctx, true, opts, hold); err != nil {
					return nil, err
				}
			}
			l, err := list(ctx, opts)
			v.answered(ctx, err)
			if err == nil {
				v.readPods()
			}
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = v.cfg.PodFieldSelector
			if err := v.holdRelist(ctx, false, opts, hold); err != nil {
				return nil, err
			}
			w, err := watchFunc(ctx, opts)
			if refusesStreamedList(opts, err) {
				v.streamRefused.Store(true)
				v.noStreamedList.Do(func() {
					log.Infof("the API server does not stream the list of Pods (is its WatchList feature off?); the view lists them instead, which holds a whole list response in memory at each relist: %v", err)
				})
				return nil, err
			}
			v.answered(ctx, err)
			if err != nil {
				return nil, err
			}
			return v.observe(ctx, w), nil
		},
	}, v.cfg.Client), expected
}

// refusesStreamedList reports whether err is an API server's refusal of a streamed list:
// 422 with the WatchList feature off, 400 from a server that does not know the parameters.
// The reflector then lists at once, and that list's answer says whether the view is fresh.
func refusesStreamedList(opts metav1.ListOptions, err error) bool {
	return opts.SendInitialEvents != nil && *opts.SendInitialEvents &&
		(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err))
}

// observe passes w's events on, and records whether each could be read: an event client-go
// could not decode ends the watch with an error event, which the reflector only logs.
func (v *View) observe(ctx context.Context, w watch.Interface) watch.Interface {
	o := &observed{Interface: w, out: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(o.out)
		for e := range w.ResultChan() {
			select {
			case <-o.done: // stopped: drain until w closes, and read nothing into what stopping does
				continue
			default:
			}
			switch {
			case e.Type != watch.Error:
				v.readPods()
			case decodingFailed(e.Object):
				v.answered(ctx, unreadable{apierrors.FromObject(e.Object)})
			}
			select {
			case o.out <- e:
			case <-o.done:
			}
		}
	}()
	return o
}

type observed struct {
	watch.Interface
	out  chan watch.Event
	done chan struct{}
	once sync.Once
}

func (o *observed) ResultChan() <-chan watch.Event { return o.out }

func (o *observed) Stop() {
	o.once.Do(func() { close(o.done) })
	o.Interface.Stop()
}

// decodingFailed reports whether an error event is client-go's own, for an event it read but
// could not decode. client-go reports a stream that breaks with the same cause, so the messages
// of its watch decoder tell the two apart.
func decodingFailed(obj runtime.Object) bool {
	s, ok := obj.(*metav1.Status)
	if !ok || s.Details == nil {
		return false
	}
	for _, c := range s.Details.Causes {
		if c.Type == "ClientWatchDecoding" && (strings.Contains(c.Message, "unable to decode watch event") ||
			strings.Contains(c.Message, "got invalid watch event type")) {
			return true
		}
	}
	return false
}
