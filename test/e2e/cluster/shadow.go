package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The endpoint shadow: a client in ClientNamespace types "primary.db", meaning Service
// primary in namespace db. Its first search candidate, primary.db.new-namespace-1.svc.<zone>,
// is endpoint primary of the headless Service db in its own namespace.
const (
	ShadowNamespace = "db"
	ShadowService   = "primary" // in ShadowNamespace
	ShadowServiceIP = "10.96.0.30"
	ShadowHeadless  = "db" // headless, in ClientNamespace
	ShadowEndpoint  = "primary"
	ShadowEndpoint4 = "10.244.1.20"
)

// ApplyShadow creates the objects of the endpoint shadow. Objects that already exist are kept.
func ApplyShadow(ctx context.Context, cs kubernetes.Interface) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ShadowNamespace}}, metav1.CreateOptions{})
	if ignoreExists(err) != nil {
		return fmt.Errorf("namespace %s: %w", ShadowNamespace, err)
	}
	ports := []corev1.ServicePort{{Name: "postgres", Port: 5432, Protocol: corev1.ProtocolTCP}}
	if err := createService(ctx, cs, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ShadowService, Namespace: ShadowNamespace},
		Spec:       corev1.ServiceSpec{ClusterIP: ShadowServiceIP, Ports: ports},
	}); err != nil {
		return err
	}
	if err := createService(ctx, cs, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ShadowHeadless, Namespace: ClientNamespace},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: ports},
	}); err != nil {
		return err
	}
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: ShadowHeadless + "-e2e", Namespace: ClientNamespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: ShadowHeadless, discoveryv1.LabelManagedBy: ManagedBy},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{ShadowEndpoint4},
			Hostname:   ptr(ShadowEndpoint),
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr("postgres"), Port: ptr(int32(5432)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ClientNamespace).Create(ctx, slice, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("endpointslice %s/%s: %w", ClientNamespace, slice.Name, err)
	}
	return nil
}
