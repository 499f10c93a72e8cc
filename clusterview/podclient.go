package clusterview

import (
	"context"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

const protobufType = "application/vnd.kubernetes.protobuf"

// podClient lists and watches Pods in protobuf, decoded as podWire.
type podClient struct{ rest rest.Interface }

// newPodClient returns nil without a configuration: a fake clientset has none.
func newPodClient(base *rest.Config) (*podClient, error) {
	if base == nil {
		return nil, nil
	}
	c := rest.CopyConfig(base)
	c.APIPath = "/api"
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.ContentType, c.AcceptContentTypes = protobufType, protobufType
	c.NegotiatedSerializer = podCodecs{scheme.Codecs.WithoutConversion()}
	r, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &podClient{r}, nil
}

func (c *podClient) list(ctx context.Context, opts metav1.ListOptions) (*podWireList, error) {
	l := &podWireList{}
	err := c.rest.Get().Resource("pods").VersionedParams(&opts, scheme.ParameterCodec).
		Timeout(timeoutOf(opts)).Do(ctx).Into(l)
	return l, err
}

func (c *podClient) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return c.rest.Get().Resource("pods").VersionedParams(&opts, scheme.ParameterCodec).
		Timeout(timeoutOf(opts)).Watch(ctx)
}

func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// podCodecs is client-go's codecs with podDecoder for objects, and a watch event decoder
// that does not copy each event's object: the object is decoded at once, before the next
// event is read into the same buffer.
type podCodecs struct{ runtime.NegotiatedSerializer }

func (c podCodecs) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return podDecoder{next: c.NegotiatedSerializer.DecoderToVersion(d, gv)}
}

func (c podCodecs) SupportedMediaTypes() []runtime.SerializerInfo {
	infos := c.NegotiatedSerializer.SupportedMediaTypes()
	out := make([]runtime.SerializerInfo, len(infos))
	for i, info := range infos {
		if info.MediaType == protobufType && info.StreamSerializer != nil {
			s := *info.StreamSerializer
			s.Serializer = watchEvents{s.Serializer}
			info.StreamSerializer = &s
		}
		out[i] = info
	}
	return out
}

// watchEvents decodes a raw protobuf metav1.WatchEvent, its object left in the frame.
type watchEvents struct{ runtime.Serializer }

func (w watchEvents) Decode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	e, ok := into.(*metav1.WatchEvent)
	if !ok {
		return w.Serializer.Decode(data, gvk, into)
	}
	*e = metav1.WatchEvent{}
	err := fields(data, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			e.Type = eventType(v)
		case 2:
			return fields(v, func(num protowire.Number, v []byte) error {
				if num == 1 {
					e.Object.Raw = v
				}
				return nil
			})
		}
		return nil
	})
	return e, &schema.GroupVersionKind{Group: "meta.k8s.io", Version: "v1", Kind: "WatchEvent"}, err
}

// eventType returns the known event types without allocating.
func eventType(v []byte) string {
	for _, t := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error} {
		if string(v) == string(t) {
			return string(t)
		}
	}
	return string(v)
}
