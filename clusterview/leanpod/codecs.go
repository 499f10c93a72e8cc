package leanpod

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// Media types a client of lean Pods asks for, protobuf first (ContentType), and the Accept header
// that says so: an API server answers protobuf, a proxy that speaks only JSON answers JSON.
const (
	ContentType = runtime.ContentTypeProtobuf
	Accept      = runtime.ContentTypeProtobuf + ", " + runtime.ContentTypeJSON
)

var (
	// scheme knows Pod and PodList as core/v1's Pod and PodList, and the meta types a client
	// reads beside them (Status, WatchEvent, ListOptions).
	scheme = runtime.NewScheme()
	// full is core/v1 as client-go knows it, for JSON.
	full = runtime.NewScheme()

	// Codecs is a rest.Config's NegotiatedSerializer for a client of core/v1 Pods that decodes
	// them lean: protobuf with apimachinery's serializer into Pod and PodList, watch events with
	// its raw serializer and framer. JSON is decoded into k8s.io/api's full types, the only ones
	// whose JSON reading client-go defines, and then made lean (FromPod).
	Codecs runtime.NegotiatedSerializer

	// ParameterCodec encodes list options as query parameters.
	ParameterCodec = runtime.NewParameterCodec(scheme)
)

func init() {
	gv := corev1.SchemeGroupVersion
	scheme.AddKnownTypes(gv, &Pod{}, &PodList{})
	metav1.AddToGroupVersion(scheme, gv)
	if err := corev1.AddToScheme(full); err != nil {
		panic(err)
	}
	var infos []runtime.SerializerInfo
	for _, info := range serializer.NewCodecFactory(scheme).SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeProtobuf {
			infos = append(infos, info)
		}
	}
	for _, info := range serializer.NewCodecFactory(full).SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeJSON {
			info.Serializer = fromFull{info.Serializer}
			info.PrettySerializer, info.StrictSerializer = nil, nil
			infos = append(infos, info)
		}
	}
	if len(infos) != 2 {
		panic(fmt.Sprintf("leanpod: %d serializers for protobuf and JSON, want 2", len(infos)))
	}
	Codecs = codecs(infos)
}

// codecs serves the serializers it holds, as they are: a client of Pods neither converts nor
// defaults them.
type codecs []runtime.SerializerInfo

func (c codecs) SupportedMediaTypes() []runtime.SerializerInfo { return c }

func (codecs) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

func (codecs) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// fromFull decodes Pods and PodLists with a serializer of the full types and returns them
// lean, and a Status as it comes (client-go reads errors from it). Any other kind is an error, as
// it is in protobuf, where the scheme knows no other: a client of Pods must not take one for none.
type fromFull struct{ runtime.Serializer }

func (d fromFull) Decode(data []byte, gvk *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	want := into
	switch into.(type) {
	case *Pod:
		into = &corev1.Pod{}
	case *PodList:
		into = &corev1.PodList{}
	}
	obj, kind, err := d.Serializer.Decode(data, gvk, into)
	if err != nil {
		return nil, kind, err
	}
	switch o := obj.(type) {
	case *metav1.Status:
		return o, kind, nil
	case *corev1.Pod:
		if w, ok := want.(*Pod); ok || want == nil {
			return fill(w, FromPod(o)), kind, nil
		}
	case *corev1.PodList:
		if w, ok := want.(*PodList); ok || want == nil {
			return fill(w, FromPodList(o)), kind, nil
		}
	}
	return nil, kind, fmt.Errorf("decoded a %s, want a %s", typeName(obj), typeName(want))
}

// fill stores v in into when there is one.
func fill[T any](into *T, v *T) *T {
	if into == nil {
		return v
	}
	*into = *v
	return into
}

func typeName(obj runtime.Object) string {
	if obj == nil {
		return "Pod"
	}
	return fmt.Sprintf("%T", obj)
}
