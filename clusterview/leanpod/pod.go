// Package leanpod is a Pod as a DNS server needs to know it: its name, its addresses and
// whether they are its own, and no more. A cluster's Pods are several kilobytes each; decoded
// in full, 50,000 of them leave 1.6 GB of garbage behind, where this type leaves what it keeps.
//
// Pod and PodList are registered in a scheme of their own and decoded by apimachinery's
// protobuf serializer and client-go's watch decoder (Codecs): only the Pod message itself is
// read here, by an Unmarshal that reads the few fields kept and checks the others as the
// generated code of k8s.io/api/core/v1 would, so that it accepts and rejects what client-go's
// own decoder does. JSON, which some API proxies answer with, goes through the full types.
//
// It imports nothing of nsguard: it is the model of a Pod on the wire, not of the view.
package leanpod

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Pod is a core/v1 Pod, lean: of its metadata only Name, Namespace, UID, ResourceVersion and
// the annotation that ends a streamed list (metav1.InitialEventsAnnotationKey) are read, and of
// its spec and status only what tells its addresses.
type Pod struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	HostNetwork bool            // spec.hostNetwork: its addresses are its node's
	Phase       corev1.PodPhase // status.phase
	PodIP       string          // status.podIP
	PodIPs      []string        // status.podIPs[].ip, in order
}

// PodList is a core/v1 PodList of lean Pods.
type PodList struct {
	metav1.TypeMeta
	metav1.ListMeta // ResourceVersion, Continue and RemainingItemCount

	Items []Pod
}

// FromPod is the lean form of a Pod decoded in full.
func FromPod(p *corev1.Pod) *Pod {
	l := &Pod{
		TypeMeta: p.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID,
			ResourceVersion: p.ResourceVersion},
		HostNetwork: p.Spec.HostNetwork,
		Phase:       p.Status.Phase,
		PodIP:       p.Status.PodIP,
	}
	if v, ok := p.Annotations[metav1.InitialEventsAnnotationKey]; ok {
		l.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: v}
	}
	for _, ip := range p.Status.PodIPs {
		l.PodIPs = append(l.PodIPs, ip.IP)
	}
	return l
}

// FromPodList is the lean form of a PodList decoded in full.
func FromPodList(pl *corev1.PodList) *PodList {
	l := &PodList{TypeMeta: pl.TypeMeta}
	pl.ListMeta.DeepCopyInto(&l.ListMeta)
	l.Items = make([]Pod, len(pl.Items))
	for i := range pl.Items {
		l.Items[i] = *FromPod(&pl.Items[i])
	}
	return l
}

// Reset empties p, as the protobuf serializer does before Unmarshal.
func (p *Pod) Reset() { *p = Pod{} }

// Reset empties l, as the protobuf serializer does before Unmarshal.
func (l *PodList) Reset() { *l = PodList{} }

func (p *Pod) DeepCopyObject() runtime.Object {
	c := *p
	p.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.PodIPs = slices.Clone(p.PodIPs)
	return &c
}

func (l *PodList) DeepCopyObject() runtime.Object {
	c := &PodList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&c.ListMeta)
	if l.Items != nil {
		c.Items = make([]Pod, len(l.Items))
		for i := range l.Items {
			c.Items[i] = *l.Items[i].DeepCopyObject().(*Pod)
		}
	}
	return c
}
