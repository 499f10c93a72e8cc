package leanpod

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"
)

// decodeFull decodes b with k8s.io/api's generated code, as client-go does; a panic is an error.
func decodeFull[T any, P interface {
	*T
	Unmarshal([]byte) error
}](b []byte) (p P, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	p = new(T)
	return p, p.Unmarshal(b)
}

// agree fails t unless the lean decoder and the full one both reject b, or both accept it and
// the lean Pod holds what FromPod keeps of the full one; the same for b as a PodList.
func agree(t testing.TB, b []byte) {
	t.Helper()
	fp, ferr := decodeFull[corev1.Pod](b)
	var lp Pod
	lerr := lp.Unmarshal(b)
	switch {
	case (ferr == nil) != (lerr == nil):
		t.Fatalf("as a Pod: full decoder %v, lean decoder %v (% x)", ferr, lerr, b)
	case ferr == nil:
		if diff := diffPod(FromPod(fp), &lp); diff != "" {
			t.Fatalf("as a Pod, the lean decoder read %s (% x)", diff, b)
		}
	}
	fl, ferr := decodeFull[corev1.PodList](b)
	var ll PodList
	lerr = ll.Unmarshal(b)
	switch {
	case (ferr == nil) != (lerr == nil):
		t.Fatalf("as a PodList: full decoder %v, lean decoder %v (% x)", ferr, lerr, b)
	case ferr == nil:
		want := FromPodList(fl)
		if want.ResourceVersion != ll.ResourceVersion || want.Continue != ll.Continue ||
			!reflect.DeepEqual(want.RemainingItemCount, ll.RemainingItemCount) || len(want.Items) != len(ll.Items) {
			t.Fatalf("as a PodList, the lean decoder read %+v and %d items, the full one %+v and %d (% x)",
				ll.ListMeta, len(ll.Items), want.ListMeta, len(want.Items), b)
		}
		for i := range want.Items {
			if diff := diffPod(&want.Items[i], &ll.Items[i]); diff != "" {
				t.Fatalf("as a PodList, item %d: the lean decoder read %s (% x)", i, diff, b)
			}
		}
	}
}

// diffPod says how got differs from want, or "".
func diffPod(want, got *Pod) string {
	var d []string
	for _, f := range []struct {
		name      string
		want, got any
	}{
		{"name", want.Name, got.Name}, {"namespace", want.Namespace, got.Namespace}, {"uid", want.UID, got.UID},
		{"resourceVersion", want.ResourceVersion, got.ResourceVersion}, {"hostNetwork", want.HostNetwork, got.HostNetwork},
		{"phase", want.Phase, got.Phase}, {"podIP", want.PodIP, got.PodIP},
	} {
		if f.want != f.got {
			d = append(d, fmt.Sprintf("%s %q, want %q", f.name, f.got, f.want))
		}
	}
	if !slices.Equal(want.PodIPs, got.PodIPs) {
		d = append(d, fmt.Sprintf("podIPs %q, want %q", got.PodIPs, want.PodIPs))
	}
	if !maps.Equal(want.Annotations, got.Annotations) {
		d = append(d, fmt.Sprintf("annotations %q, want %q", got.Annotations, want.Annotations))
	}
	return strings.Join(d, "; ")
}

// A message in protobuf, built field by field.
type pb []byte

func (b pb) bytes(num protowire.Number, v []byte) pb {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}
func (b pb) str(num protowire.Number, s string) pb { return b.bytes(num, []byte(s)) }
func (b pb) varint(num protowire.Number, v uint64) pb {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}
func (b pb) raw(v ...byte) pb { return append(b, v...) }
func (b pb) tag(num protowire.Number, typ protowire.Type) pb {
	return protowire.AppendTag(b, num, typ)
}

func marshal(t testing.TB, m interface{ Marshal() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type agreeCase struct {
	name string
	b    []byte
}

// agreeCases are inputs a lenient reader gets wrong, and a Pod as a cluster holds it.
func agreeCases(t testing.TB) []agreeCase {
	meta := pb{}.str(1, "web").str(3, "team-a").str(5, "uid-1").str(6, "42")
	ip := func(s string) []byte { return pb{}.str(1, s) }
	status := pb{}.str(1, "Running").str(6, "10.0.0.1").bytes(12, ip("10.0.0.1")).bytes(12, ip("fd00::1"))
	pod := pb{}.bytes(1, meta).bytes(2, pb{}.varint(11, 0)).bytes(3, status)
	annotation := func(k, v string) []byte { return pb{}.str(1, k).str(2, v) }
	quantity := func(s string) []byte { return pb{}.str(1, s) }
	limits := func(q []byte) []byte {
		return pb{}.bytes(2, pb{}.str(1, "c").str(2, "nginx").bytes(8, pb{}.bytes(1, pb{}.str(1, "cpu").bytes(2, q))))
	}
	real := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", UID: types.UID("u"), ResourceVersion: "7",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true", "a": "b"},
			CreationTimestamp: metav1.Unix(1700000000, 0)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
			SecurityContext: &corev1.PodSecurityContext{SupplementalGroups: []int64{1, 2, 3}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}}},
	}
	return []agreeCase{
		{"empty", nil},
		{"pod", pod},
		{"real pod", marshal(t, real)},
		{"list", pb{}.bytes(1, pb{}.str(2, "99").str(3, "next").varint(4, 5)).bytes(2, pod).bytes(2, pod)},
		{"podIP ip twice", pb{}.bytes(3, pb{}.bytes(12, pb{}.str(1, "10.0.0.1").str(1, "10.0.0.2")))},
		{"podIP without ip", pb{}.bytes(3, pb{}.bytes(12, nil))},
		{"metadata as a varint", pb{}.varint(1, 5)},
		{"hostNetwork as bytes", pb{}.bytes(2, pb{}.str(11, "true"))},
		{"hostNetwork twice", pb{}.bytes(2, pb{}.varint(11, 1).varint(11, 0))},
		{"hostNetwork in a ten-byte varint", pb{}.bytes(2, pb{}.raw(11<<3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f))},
		{"hostNetwork in an eleven-byte varint", pb{}.bytes(2, pb{}.raw(11<<3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01))},
		{"metadata twice, merged", pb{}.bytes(1, meta).bytes(1, pb{}.str(1, "api"))},
		{"status twice, podIPs added", pb{}.bytes(3, status).bytes(3, pb{}.bytes(12, ip("10.0.0.9")))},
		{"name as a varint", pb{}.bytes(1, pb{}.varint(1, 3))},
		{"unknown field as a varint", pb{}.varint(99, 1).bytes(1, meta)},
		{"field number zero", pb{}.raw(0x02, 0x00)},
		{"field number past 32 bits names field 1", pb{}.raw(0x8a, 0x80, 0x80, 0x80, 0x80, 0x02, 0x00)},
		{"end group", pb{}.raw(0x0c)},
		{"group skipped", pb{}.tag(99, protowire.StartGroupType).varint(1, 1).tag(99, protowire.EndGroupType).bytes(1, meta)},
		{"group never ended", pb{}.tag(99, protowire.StartGroupType).varint(1, 1)},
		{"wire type 6", pb{}.tag(99, 6)},
		{"truncated", pod[:len(pod)-1]},
		{"length past the end", pb{}.raw(0x0a, 0x05, 0x01)},
		{"negative length", pb{}.raw(0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)},
		{"annotation that ends a streamed list", pb{}.bytes(1, pb{}.bytes(12, annotation(metav1.InitialEventsAnnotationKey, "true")))},
		{"annotation key as a varint tag", pb{}.bytes(1, pb{}.bytes(12, pb{}.raw(0x08, byte(len(metav1.InitialEventsAnnotationKey))).raw([]byte(metav1.InitialEventsAnnotationKey)...).str(2, "true")))},
		{"annotation given twice", pb{}.bytes(1, pb{}.bytes(12, annotation(metav1.InitialEventsAnnotationKey, "true")).bytes(12, annotation(metav1.InitialEventsAnnotationKey, "false")))},
		{"annotation without key", pb{}.bytes(1, pb{}.bytes(12, pb{}.str(2, "true")))},
		{"annotation key past the entry", pb{}.bytes(1, pb{}.raw(12<<3|2, 0x02, 0x0a, 0x02).str(1, "x"))},
		{"annotation entry with a stray field", pb{}.bytes(1, pb{}.bytes(12, pb{}.varint(3, 1).str(1, "k")))},
		{"annotation entry with an end group", pb{}.bytes(1, pb{}.bytes(12, pb{}.raw(0x1c)))},
		{"quantity that parses", pb{}.bytes(2, limits(quantity("100m")))},
		{"quantity that does not parse", pb{}.bytes(2, limits(quantity("lots")))},
		{"empty quantity string", pb{}.bytes(2, limits(quantity("")))},
		{"quantity without string", pb{}.bytes(2, limits(nil))},
		{"quantity as a varint", pb{}.bytes(2, limits(pb{}.varint(1, 1)))},
		{"quantity length near MaxInt64", pb{}.bytes(2, limits(protowire.AppendVarint(pb{}.raw(0x0a), math.MaxInt64-2)))},
		{"supplementalGroups packed", pb{}.bytes(2, pb{}.bytes(14, pb{}.bytes(4, []byte{1, 2, 3})))},
		{"supplementalGroups packed, varint past the end", pb{}.bytes(2, pb{}.bytes(14, pb{}.raw(4<<3|2, 1, 0x80, 0x01)))},
		{"supplementalGroups as a fixed64", pb{}.bytes(2, pb{}.bytes(14, pb{}.raw(4<<3|1, 1, 2, 3, 4, 5, 6, 7, 8)))},
		{"creationTimestamp nanos as bytes", pb{}.bytes(1, pb{}.bytes(8, pb{}.str(2, "x")))},
		{"remainingItemCount as bytes", pb{}.bytes(1, pb{}.str(4, "5"))},
		{"container name as a varint", pb{}.bytes(2, pb{}.bytes(2, pb{}.varint(1, 1)))},
		{"phase unknown", pb{}.bytes(3, pb{}.str(1, "Dreaming"))},
	}
}

// TestAgrees: the lean decoder reads what the full one reads, and rejects what it rejects.
func TestAgrees(t *testing.T) {
	for _, tc := range agreeCases(t) {
		t.Run(tc.name, func(t *testing.T) { agree(t, tc.b) })
	}
}

// TestAgreesOnRandomPods: Pods with every field filled at random, as the API server would
// encode them, read alike.
func TestAgreesOnRandomPods(t *testing.T) {
	f := randfill.NewWithSeed(1).NilChance(0.2).NumElements(0, 3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewMilliQuantity(c.Int63n(1<<40), resource.DecimalSI)
		},
	)
	for i := range 500 {
		var p corev1.Pod
		f.Fill(&p)
		b := marshal(t, &p)
		agree(t, b)
		var l Pod
		if err := l.Unmarshal(b); err != nil {
			t.Fatalf("random Pod %d: %v", i, err)
		}
	}
}

// FuzzAgrees: whatever the bytes, the lean decoder and the full one both reject them, or both
// read the same Pod (and PodList). Its seeds are agreeCases and testdata/fuzz/FuzzAgrees, which
// holds Pods as a cluster holds them; make test runs them, make fuzz looks for more.
func FuzzAgrees(f *testing.F) {
	for _, tc := range agreeCases(f) {
		f.Add(tc.b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { agree(t, b) })
}

// TestFieldNumbers: the numbers of the fields a lean Pod keeps are the ones k8s.io/api tags.
func TestFieldNumbers(t *testing.T) {
	for _, f := range []struct {
		in    any
		field string
		num   int
	}{
		{corev1.Pod{}, "ObjectMeta", podMetadata}, {corev1.Pod{}, "Spec", podSpec}, {corev1.Pod{}, "Status", podStatus},
		{metav1.ObjectMeta{}, "Name", metaName}, {metav1.ObjectMeta{}, "Namespace", metaNamespace},
		{metav1.ObjectMeta{}, "UID", metaUID}, {metav1.ObjectMeta{}, "ResourceVersion", metaVersion},
		{metav1.ObjectMeta{}, "Annotations", metaAnnotations}, {corev1.PodSpec{}, "HostNetwork", specHostNetwork},
		{corev1.PodStatus{}, "Phase", statusPhase}, {corev1.PodStatus{}, "PodIP", statusPodIP},
		{corev1.PodStatus{}, "PodIPs", statusPodIPs}, {corev1.PodIP{}, "IP", podIPsIP},
		{corev1.PodList{}, "ListMeta", listMetadata}, {corev1.PodList{}, "Items", listItems},
		{metav1.ListMeta{}, "ResourceVersion", listVersion}, {metav1.ListMeta{}, "Continue", listContinue},
		{metav1.ListMeta{}, "RemainingItemCount", listRemaining},
	} {
		sf, ok := reflect.TypeOf(f.in).FieldByName(f.field)
		if !ok {
			t.Fatalf("%T has no field %s", f.in, f.field)
		}
		if got := strings.Split(sf.Tag.Get("protobuf"), ",")[1]; got != fmt.Sprint(f.num) {
			t.Errorf("%T.%s is field %s, the lean decoder reads %d", f.in, f.field, got, f.num)
		}
	}
}
