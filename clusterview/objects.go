package clusterview

import (
	"net/netip"
	"slices"

	"github.com/coredns/coredns/plugin/kubernetes/object"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/clusterview/leanpod"
)

// The view keeps only these small objects: transforms turn each API object into one as it
// arrives, so that no full object outlives its decoding.

// serviceObj is a Service and, for an ExternalName, its target: the advice names the
// Service an alias leads to, not the alias.
type serviceObj struct {
	meta
	externalName string
}

// sliceObj is an EndpointSlice: its Service and the names its endpoints answer to.
type sliceObj struct {
	meta
	service string
	names   []string // hostnames and target Pod names
}

// namespaceObj is a Namespace: its name is all the view needs.
type namespaceObj struct{ meta }

// meta is what an informer's store needs of an object: its key and version.
type meta struct {
	name, namespace, version string
	*object.Empty
}

func (m *meta) GetName() string                    { return m.name }
func (m *meta) SetName(string)                     {}
func (m *meta) GetNamespace() string               { return m.namespace }
func (m *meta) SetNamespace(string)                {}
func (m *meta) GetResourceVersion() string         { return m.version }
func (m *meta) SetResourceVersion(string)          {}
func (m *meta) GetDeletionTimestamp() *metav1.Time { return nil }

func metaOf(o metav1.Object) meta {
	return meta{name: o.GetName(), namespace: o.GetNamespace(), version: o.GetResourceVersion()}
}

func (o *serviceObj) DeepCopyObject() runtime.Object   { c := *o; return &c }
func (o *namespaceObj) DeepCopyObject() runtime.Object { c := *o; return &c }
func (o *sliceObj) DeepCopyObject() runtime.Object {
	c := *o
	c.names = slices.Clone(o.names)
	return &c
}

// toSmall is the transform of the view's own informers. Tombstones and objects already
// small pass through.
func toSmall(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Service:
		s := &serviceObj{meta: metaOf(o)}
		if o.Spec.Type == corev1.ServiceTypeExternalName {
			s.externalName = o.Spec.ExternalName
		}
		return s, nil
	case *discovery.EndpointSlice:
		s := &sliceObj{meta: metaOf(o), service: o.Labels[discovery.LabelServiceName]}
		for _, ep := range o.Endpoints {
			e := clusterdns.SliceEndpoint{Addresses: ep.Addresses, Ready: ep.Conditions.Ready}
			if ep.Hostname != nil {
				e.Hostname = *ep.Hostname
			}
			if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" {
				e.PodName = ep.TargetRef.Name
			}
			for _, n := range e.Names() {
				if clusterdns.IsServiceName(n.Name) { // only a name a Service can have shadows one
					s.names = append(s.names, n.Name)
				}
			}
		}
		return s, nil
	case *corev1.Namespace:
		return &namespaceObj{meta: metaOf(o)}, nil
	}
	return obj, nil // already small, or a tombstone: the store handles it itself
}

// podObj is a Pod on its way into the Pod store: its key, its own addresses, and its UID
// when Events name it. Nothing else of a Pod of many kilobytes stays in memory.
type podObj struct {
	key   string   // "namespace/name"
	addrs podAddrs // parsed once here, so the query path never formats a client's address
	uid   string
}

// toPod reduces a Pod to what naming a client needs. A host-network Pod has its node's
// address, and a finished one's may be another Pod's already: neither gets addresses.
func toPod(p *corev1.Pod, uids bool) *podObj { return smallPod(leanpod.FromPod(p), uids) }

// smallPod is what the view keeps of a Pod: host-network and finished Pods hold no address
// that names them.
func smallPod(p *leanpod.Pod, uids bool) *podObj {
	o := &podObj{key: p.Namespace + "/" + p.Name}
	if uids {
		o.uid = string(p.UID)
	}
	if p.HostNetwork || p.Phase == corev1.PodSucceeded || p.Phase == corev1.PodFailed {
		return o
	}
	for _, ip := range p.PodIPs {
		o.addAddr(ip)
	}
	if o.addrs == (podAddrs{}) {
		o.addAddr(p.PodIP)
	}
	return o
}

// addAddr records a Pod address from the API. One that does not parse can match no client,
// and :: is no Pod's. The API gives a Pod at most one address of each family; beyond two,
// the others are not kept.
func (o *podObj) addAddr(s string) {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return
	}
	k := ip.As16()
	for i, a := range o.addrs {
		switch a {
		case k:
			return
		case addr16{}:
			if k != (addr16{}) {
				o.addrs[i] = k
			}
			return
		}
	}
}
