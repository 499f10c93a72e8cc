package clusterview

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/nsguard/nsguard/clusterview/leanpod"
	"github.com/nsguard/nsguard/test/e2e/scale"
)

// wirePods are Pods of every shape the view tells apart, the first as a cluster holds it.
func wirePods() []*corev1.Pod {
	real := scale.Full.PodObject(7)
	real.Status = scale.Full.PodStatus(7)
	real.UID = "uid-real"
	real.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(strings.Repeat(`{"f:metadata":{}}`, 200))}}
	pod := func(name string, f func(p *corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "42",
			Annotations: map[string]string{"kept": "no"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.5", PodIPs: []corev1.PodIP{{IP: "10.244.1.5"}, {IP: "fd00::5"}}}}
		f(p)
		return p
	}
	return []*corev1.Pod{
		real,
		pod("dual-stack", func(*corev1.Pod) {}),
		pod("host-network", func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
		pod("succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod("pending", func(p *corev1.Pod) { p.Status = corev1.PodStatus{Phase: corev1.PodPending} }),
		pod("old-api-server", func(p *corev1.Pod) { p.Status.PodIPs = nil }),
		pod("bad-address", func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "not-an-address"}} }),
		pod("bookmark", func(p *corev1.Pod) {
			p.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
		}),
	}
}

func encode(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// leanDecoder is the decoder the view's Pod client reads objects in mediaType with.
func leanDecoder(t testing.TB, mediaType string) runtime.Decoder {
	t.Helper()
	d, err := runtime.NewClientNegotiator(leanpod.Codecs, corev1.SchemeGroupVersion).Decoder(mediaType, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const protobufType = runtime.ContentTypeProtobuf

// TestPodDecoder: what the view keeps of each Pod is the same decoded lean off the wire as
// decoded in full.
func TestPodDecoder(t *testing.T) {
	d := leanDecoder(t, protobufType)
	for _, p := range wirePods() {
		t.Run(p.Name, func(t *testing.T) {
			p.APIVersion, p.Kind = "v1", "Pod"
			obj, _, err := d.Decode(encode(t, p), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			w, ok := obj.(*leanpod.Pod)
			if !ok {
				t.Fatalf("decoded %T, want *leanpod.Pod", obj)
			}
			for _, uids := range []bool{false, true} {
				if got, want := smallPod(w, uids), toPod(p, uids); got.key != want.key || got.uid != want.uid || got.addrs != want.addrs {
					t.Errorf("uids %v: kept %+v, want %+v", uids, *got, *want)
				}
			}
			if w.ResourceVersion != p.ResourceVersion {
				t.Errorf("resourceVersion %q, want %q", w.ResourceVersion, p.ResourceVersion)
			}
			want := map[string]string(nil)
			if v, ok := p.Annotations[metav1.InitialEventsAnnotationKey]; ok {
				want = map[string]string{metav1.InitialEventsAnnotationKey: v}
			}
			if !equalMaps(w.Annotations, want) {
				t.Errorf("annotations %v, want %v", w.Annotations, want)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestPodDecoderMalformed: bytes that are not a Pod give an error, never a panic.
func TestPodDecoderMalformed(t *testing.T) {
	d := leanDecoder(t, protobufType)
	whole := encode(t, &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: "a"}})
	magic := whole[:4]
	for _, b := range [][]byte{nil, magic, append(slices.Clone(magic), 0xff), whole[:len(whole)-3], []byte(`{"kind":`)} {
		if _, _, err := d.Decode(b, nil, nil); err == nil {
			t.Errorf("Decode(%q) succeeded", b)
		}
	}
}

// TestPodClient lists and watches Pods from an API server that speaks protobuf, streamed
// list and all, and keeps the 410 that makes the reflector list again.
func TestPodClient(t *testing.T) {
	pods := wirePods()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/pods" || r.Header.Get("Accept") != leanpod.Accept {
			http.Error(w, "unexpected "+r.URL.String()+" accepting "+r.Header.Get("Accept"), http.StatusBadRequest)
			return
		}
		if r.URL.Query().Get("watch") != "true" {
			l := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: "99"}}
			for _, p := range pods {
				l.Items = append(l.Items, *p)
			}
			w.Header().Set("Content-Type", protobufType)
			w.Write(encode(t, l))
			return
		}
		w.Header().Set("Content-Type", protobufType+";stream=watch")
		enc := protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme)
		framer := protobuf.LengthDelimitedFramer.NewFrameWriter(w)
		send := func(typ watch.EventType, obj runtime.Object) {
			var b bytes.Buffer
			if err := enc.Encode(&metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: encode(t, obj)}}, &b); err != nil {
				t.Error(err)
			}
			framer.Write(b.Bytes())
		}
		for _, p := range pods {
			p.APIVersion, p.Kind = "v1", "Pod"
			send(watch.Added, p)
		}
		gone := apierrors.NewResourceExpired("too old resource version: 1 (99)").ErrStatus
		gone.APIVersion, gone.Kind = "v1", "Status"
		send(watch.Error, &gone)
	}))
	defer srv.Close()

	c, err := newPodClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.list(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.ResourceVersion != "99" || len(l.Items) != len(pods) || l.Items[0].Name != pods[0].Name {
		t.Errorf("list: resourceVersion %q, %d items, want 99 and %d", l.ResourceVersion, len(l.Items), len(pods))
	}

	wt, err := c.watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Stop()
	var names []string
	for e := range wt.ResultChan() {
		if e.Type == watch.Error {
			if err := apierrors.FromObject(e.Object); !apierrors.IsResourceExpired(err) {
				t.Errorf("error event %v, want the 410 the reflector lists again on", err)
			}
			break
		}
		p, ok := e.Object.(*leanpod.Pod)
		if !ok || e.Type != watch.Added {
			t.Fatalf("event %s %T, want ADDED *leanpod.Pod", e.Type, e.Object)
		}
		names = append(names, p.Name)
	}
	if len(names) != len(pods) || names[len(names)-1] != "bookmark" {
		t.Errorf("watched %v, want all %d Pods", names, len(pods))
	}
}

// BenchmarkDecodePod compares what decoding one Pod as a cluster holds it allocates, in
// full and lean: across a list of 50,000 that is the garbage CoreDNS's heap fills with.
func BenchmarkDecodePod(b *testing.B) {
	p := wirePods()[0]
	p.APIVersion, p.Kind = "v1", "Pod"
	data := encode(b, p)
	b.Logf("a Pod of %d bytes in protobuf", len(data))
	for _, c := range []struct {
		name string
		d    runtime.Decoder
	}{
		{"decoder=full", scheme.Codecs.UniversalDeserializer()},
		{"decoder=lean", leanDecoder(b, protobufType)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.d.Decode(data, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzPodDecoder: whatever the bytes, an error or a Pod, never a panic.
func FuzzPodDecoder(f *testing.F) {
	for _, p := range wirePods() {
		p.APIVersion, p.Kind = "v1", "Pod"
		f.Add(encode(f, p))
	}
	pb, js := leanDecoder(f, protobufType), leanDecoder(f, runtime.ContentTypeJSON)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, d := range []runtime.Decoder{pb, js} {
			if obj, _, err := d.Decode(b, nil, nil); err == nil {
				if w, ok := obj.(*leanpod.Pod); ok {
					smallPod(w, true)
				}
			}
		}
	})
}

// BenchmarkDecodePodWatch: what decoding one watch event of a Pod as a cluster holds it costs,
// through client-go's watch decoder as a REST client builds it, in full and lean: a streamed
// list of 50,000 Pods is 50,000 of them.
func BenchmarkDecodePodWatch(b *testing.B) {
	p := wirePods()[0]
	p.APIVersion, p.Kind = "v1", "Pod"
	var stream bytes.Buffer
	frames := protobuf.LengthDelimitedFramer.NewFrameWriter(&stream)
	const count = 1000
	for range count {
		var e bytes.Buffer
		err := protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme).Encode(&metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: encode(b, p)}}, &e)
		if err != nil {
			b.Fatal(err)
		}
		frames.Write(e.Bytes())
	}
	for _, c := range []struct {
		name string
		ns   runtime.NegotiatedSerializer
	}{
		{"decoder=full", scheme.Codecs.WithoutConversion()},
		{"decoder=lean", leanpod.Codecs},
	} {
		b.Run(c.name, func(b *testing.B) {
			objects, events, framer, err := runtime.NewClientNegotiator(c.ns, corev1.SchemeGroupVersion).StreamDecoder(protobufType, nil)
			if err != nil {
				b.Fatal(err)
			}
			open := func() *restclientwatch.Decoder {
				return restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream.Bytes()))), events), objects)
			}
			d, n := open(), 0
			b.ReportAllocs()
			for b.Loop() {
				if n == count {
					b.StopTimer()
					d, n = open(), 0
					b.StartTimer()
				}
				if _, _, err := d.Decode(); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}

// BenchmarkDecodePodList: what decoding a page of 500 Pods as a cluster holds them costs, in
// full and lean; per Pod, an op's figures divided by 500.
func BenchmarkDecodePodList(b *testing.B) {
	const pods = 500
	l := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: "99"}}
	for i := range pods {
		l.Items = append(l.Items, *peakPod(i))
	}
	data := encode(b, l)
	for _, c := range []struct {
		name string
		ns   runtime.NegotiatedSerializer
		into func() runtime.Object
	}{
		{"decoder=full", scheme.Codecs.WithoutConversion(), func() runtime.Object { return &corev1.PodList{} }},
		{"decoder=lean", leanpod.Codecs, func() runtime.Object { return &leanpod.PodList{} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			d, err := runtime.NewClientNegotiator(c.ns, corev1.SchemeGroupVersion).Decoder(protobufType, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := d.Decode(data, nil, c.into()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
