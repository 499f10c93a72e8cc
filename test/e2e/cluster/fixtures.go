package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Names of the incident's objects.
const (
	LegacyNamespace = "my-app"          // the namespace that captured the short name
	ClientNamespace = "new-namespace-1" // where the client pod runs
	AppNamespace    = "new-namespace-2" // where Service my-app really lives

	AppService       = "my-app"
	AppClusterIP     = "10.96.0.20"
	AppPort          = 443
	AppPortName      = "https"
	AppEndpointIP    = "10.244.2.10"
	AppEndpointSlice = "my-app-e2e"
	ManagedBy        = "nsguard-e2e" // endpointslice.kubernetes.io/managed-by

	// ExternalName Services in LegacyNamespace, to ClusterIP Services in OtherAppNamespace,
	// as in the incident kube-dns was observed with.
	OtherApp1         = "other-app-1"
	OtherApp2         = "other-app-2"
	OtherAppNamespace = "legacy-a"
	OtherApp1IP       = "10.96.0.31"
	OtherApp2IP       = "10.96.0.32"
	OtherApp1Target   = OtherApp1 + "." + OtherAppNamespace + ".svc.cluster.local"
	OtherApp2Target   = OtherApp2 + "." + OtherAppNamespace + ".svc.cluster.local"
	EmptyNamespace    = "empty-ns" // a namespace without Services: its apex is NODATA on kube-dns too

	ClientPod   = "client"
	ClientImage = "registry.k8s.io/pause:3.10" // never pulled: there is no kubelet
)

// ApplyIncident creates the incident's namespaces, Services, EndpointSlice and
// client Pod, whose status is set to Running with clientPodIP (the address
// the DNS client will query from). Objects that already exist are kept.
func ApplyIncident(ctx context.Context, cs kubernetes.Interface, clientPodIP string) error {
	for _, ns := range []string{LegacyNamespace, ClientNamespace, AppNamespace, OtherAppNamespace, EmptyNamespace} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if ignoreExists(err) != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	if err := createAppService(ctx, cs); err != nil {
		return err
	}
	for name, ip := range map[string]string{OtherApp1: OtherApp1IP, OtherApp2: OtherApp2IP} {
		if err := createClusterIPService(ctx, cs, OtherAppNamespace, name, ip); err != nil {
			return err
		}
	}
	if err := CreateExternalNameService(ctx, cs, LegacyNamespace, OtherApp1, OtherApp1Target); err != nil {
		return err
	}
	if err := CreateExternalNameService(ctx, cs, LegacyNamespace, OtherApp2, OtherApp2Target); err != nil {
		return err
	}
	return createClientPod(ctx, cs, clientPodIP)
}

// createClusterIPService creates a ClusterIP Service with the https port, without endpoints.
func createClusterIPService(ctx context.Context, cs kubernetes.Interface, namespace, name, ip string) error {
	return createService(ctx, cs, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: ip,
			Ports:     []corev1.ServicePort{{Name: AppPortName, Port: AppPort, Protocol: corev1.ProtocolTCP}},
		},
	})
}

func createAppService(ctx context.Context, cs kubernetes.Interface) error {
	if err := createClusterIPService(ctx, cs, AppNamespace, AppService, AppClusterIP); err != nil {
		return err
	}
	// No controller manager runs, so the slice is made by hand.
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: AppEndpointSlice, Namespace: AppNamespace,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: AppService,
				discoveryv1.LabelManagedBy:   ManagedBy,
			},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{AppEndpointIP},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr(AppPortName), Port: ptr(int32(AppPort)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(AppNamespace).Create(ctx, slice, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("endpointslice %s/%s: %w", AppNamespace, AppEndpointSlice, err)
	}
	return nil
}

func createClientPod(ctx context.Context, cs kubernetes.Interface, podIP string) error {
	return CreateRunningPod(ctx, cs, ClientNamespace, ClientPod, podIP)
}

// createService creates svc unless it exists. A second create of a Service
// with a fixed ClusterIP fails with "IP already allocated", not AlreadyExists.
func createService(ctx context.Context, cs kubernetes.Interface, svc *corev1.Service) error {
	c := cs.CoreV1().Services(svc.Namespace)
	if _, err := c.Get(ctx, svc.Name, metav1.GetOptions{}); err == nil {
		return nil
	}
	if _, err := c.Create(ctx, svc, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func ptr[T any](v T) *T { return &v }
