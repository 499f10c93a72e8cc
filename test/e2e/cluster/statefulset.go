package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The Kubernetes docs' StatefulSet example: StatefulSet web, governed by the headless Service
// nginx, in namespace shop. Its pods reach each other as web-0.nginx, which a pod's search list
// makes web-0.nginx.shop.svc.<zone>: the endpoint web-0 of Service nginx.
//
// The trap for it: a namespace nginx holding a Service web-0, so that web-0.nginx also reads
// as "Service web-0 in namespace nginx" (web-0.nginx.svc.<zone>, the next search candidate).
const (
	ShopNamespace   = "shop"
	PeerService     = "nginx" // headless, in ShopNamespace
	PeerPod         = "web-0" // the endpoint's hostname and its Pod
	PeerPodIP       = "10.244.3.10"
	ShopClientPod   = "web-1" // the peer that asks
	ShopClientPodIP = "10.244.3.11"

	PeerTrapNamespace = "nginx"
	PeerTrapService   = "web-0" // ClusterIP, in PeerTrapNamespace
	PeerTrapClusterIP = "10.96.0.40"
)

// ApplyStatefulSet creates the StatefulSet's namespace, headless Service, EndpointSlice and
// both Pods (Running), and the trap's namespace and Service. Objects that already exist are kept.
func ApplyStatefulSet(ctx context.Context, cs kubernetes.Interface) error {
	for _, ns := range []string{ShopNamespace, PeerTrapNamespace} {
		if err := ensureNamespace(ctx, cs, ns); err != nil {
			return err
		}
	}
	ports := []corev1.ServicePort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP}}
	if err := createService(ctx, cs, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: PeerService, Namespace: ShopNamespace},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: ports},
	}); err != nil {
		return err
	}
	if err := createService(ctx, cs, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: PeerTrapService, Namespace: PeerTrapNamespace},
		Spec:       corev1.ServiceSpec{ClusterIP: PeerTrapClusterIP, Ports: ports},
	}); err != nil {
		return err
	}
	for name, ip := range map[string]string{PeerPod: PeerPodIP, ShopClientPod: ShopClientPodIP} {
		if err := CreateRunningPod(ctx, cs, ShopNamespace, name, ip); err != nil {
			return err
		}
	}
	ready := true
	endpoint := func(pod, ip string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Hostname:   ptr(pod),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ShopNamespace, Name: pod},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		}
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: PeerService + "-e2e", Namespace: ShopNamespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: PeerService, discoveryv1.LabelManagedBy: ManagedBy},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{endpoint(PeerPod, PeerPodIP), endpoint(ShopClientPod, ShopClientPodIP)},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("web"), Port: ptr(int32(80)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ShopNamespace).Create(ctx, slice, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("endpointslice %s/%s: %w", ShopNamespace, slice.Name, err)
	}
	return nil
}
