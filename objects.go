package nsguard

import (
	"net/netip"
	"slices"

	"github.com/coredns/coredns/plugin/kubernetes/object"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nsguard/nsguard/clusterdns"
)

// The view keeps only these small objects: informer transforms turn each API object into
// one, so a cluster of tens of thousands of objects fits in a few tens of megabytes.

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

// podObj is a live Pod's own addresses, and its UID when Events name it.
type podObj struct {
	meta
	ips []netip.Addr // parsed once here, so the query path never formats a client's address
	uid string
}

// addAddr records a Pod address from the API. One that does not parse can match no client.
func (o *podObj) addAddr(s string) {
	if ip, err := netip.ParseAddr(s); err == nil {
		o.ips = append(o.ips, ip.Unmap())
	}
}

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

func (o *serviceObj) DeepCopyObject() runtime.Object { c := *o; return &c }
func (o *podObj) DeepCopyObject() runtime.Object {
	c := *o
	c.ips = slices.Clone(o.ips)
	return &c
}
func (o *sliceObj) DeepCopyObject() runtime.Object {
	c := *o
	c.names = slices.Clone(o.names)
	return &c
}

// toSmall is the informers' transform. Tombstones and objects already small pass through.
func toSmall(obj any) (any, error) { return transform(obj, false) }

// toSmallWithUIDs is the transform when Events are on: they need a Pod's UID to show in
// kubectl describe pod.
func toSmallWithUIDs(obj any) (any, error) { return transform(obj, true) }

func transform(obj any, uids bool) (any, error) {
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
	case *corev1.Pod:
		p := &podObj{meta: metaOf(o)}
		if uids {
			p.uid = string(o.UID)
		}
		// A host-network Pod has its node's address; a finished one's may be reused already.
		if o.Spec.HostNetwork || o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed {
			return p, nil
		}
		for _, ip := range o.Status.PodIPs {
			p.addAddr(ip.IP)
		}
		if len(p.ips) == 0 {
			p.addAddr(o.Status.PodIP)
		}
		return p, nil
	case *serviceObj, *sliceObj, *podObj:
		return obj, nil
	}
	return obj, nil // a tombstone: the store handles it itself
}
