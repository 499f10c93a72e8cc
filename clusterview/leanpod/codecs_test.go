package leanpod

import (
	"bytes"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

func samplePod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", UID: "u-1", ResourceVersion: "42",
			Annotations: map[string]string{"a": "b"}, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}},
	}
}

// encoded is obj as the API server sends it in mediaType.
func encoded(t *testing.T, mediaType string, obj runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	switch mediaType {
	case runtime.ContentTypeProtobuf:
		if err := protobuf.NewSerializer(full, full).Encode(obj, &b); err != nil {
			t.Fatal(err)
		}
	default:
		if err := json.NewEncoder(&b).Encode(obj); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func decoder(t *testing.T, mediaType string) runtime.Decoder {
	t.Helper()
	d, err := runtime.NewClientNegotiator(Codecs, corev1.SchemeGroupVersion).Decoder(mediaType, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCodecs: in protobuf and in JSON, a Pod and a PodList come out lean, into an object given
// or not, a Status comes out as it is, and any other kind or group is an error.
func TestCodecs(t *testing.T) {
	want := FromPod(samplePod())
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "99", Continue: "more"}, Items: []corev1.Pod{*samplePod(), *samplePod()}}
	status := &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
		Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"}
	other := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	elsewhere := samplePod()
	elsewhere.APIVersion = "example.com/v1"

	for _, mt := range []string{runtime.ContentTypeProtobuf, runtime.ContentTypeJSON} {
		t.Run(mt, func(t *testing.T) {
			d := decoder(t, mt)
			for _, into := range []runtime.Object{nil, &Pod{}} {
				obj, _, err := d.Decode(encoded(t, mt, samplePod()), nil, into)
				p, ok := obj.(*Pod)
				if err != nil || !ok {
					t.Fatalf("Pod into %T: %T, %v", into, obj, err)
				}
				if into != nil && p != into {
					t.Errorf("Pod decoded into a new object, not the one given")
				}
				if diff := diffPod(want, p); diff != "" {
					t.Errorf("Pod into %T: %s", into, diff)
				}
			}
			for _, into := range []runtime.Object{nil, &PodList{}} {
				obj, _, err := d.Decode(encoded(t, mt, list), nil, into)
				l, ok := obj.(*PodList)
				if err != nil || !ok {
					t.Fatalf("PodList into %T: %T, %v", into, obj, err)
				}
				if l.ResourceVersion != "99" || l.Continue != "more" || len(l.Items) != 2 || diffPod(want, &l.Items[1]) != "" {
					t.Errorf("PodList into %T: %+v", into, l)
				}
			}
			obj, _, err := d.Decode(encoded(t, mt, status), &schema.GroupVersionKind{Version: "v1"}, nil)
			if s, ok := obj.(*metav1.Status); err != nil || !ok || !apierrors.IsResourceExpired(apierrors.FromObject(s)) {
				t.Errorf("Status: %T %v", obj, err)
			}
			for name, obj := range map[string]runtime.Object{"ConfigMap": other, "Pod of another group": elsewhere} {
				for _, into := range []runtime.Object{nil, &Pod{}, &PodList{}} {
					if got, _, err := d.Decode(encoded(t, mt, obj), nil, into); err == nil {
						t.Errorf("%s into %T decoded as %T", name, into, got)
					}
				}
			}
		})
	}
}

func TestParameterCodec(t *testing.T) {
	yes := true
	q, err := ParameterCodec.EncodeParameters(&metav1.ListOptions{Watch: true, ResourceVersion: "7", SendInitialEvents: &yes,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Limit: 500}, corev1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.Encode(), "limit=500&resourceVersion=7&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true"; got != want {
		t.Errorf("query %s, want %s", got, want)
	}
}
