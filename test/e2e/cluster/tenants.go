package cluster

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Tenants are many ordinary namespaces, each with the same three Services, so that tests can
// ask hundreds of distinct questions that have real answers:
//
//   - api: ClusterIP TenantAPIIP(i), ports http (80/TCP) and dns (53/UDP);
//   - pool: headless, with TenantEndpoints endpoints pool-0, pool-1, ... (hostnames, and Pods
//     of that name as their targets) at TenantEndpointIP(i, j);
//   - alias: ExternalName, to other-app-1.example.net (even i, which the upstream stand-in
//     knows) or to gone-<i>.example.net (odd i, which it does not).
//
// No name here shadows another: there is no namespace pool, api or alias.
const (
	TenantCount     = 40
	TenantEndpoints = 3

	TenantAPI   = "api"
	TenantPool  = "pool"
	TenantAlias = "alias"
)

// TenantNamespace is the name of tenant i.
func TenantNamespace(i int) string { return "tenant-" + strconv.Itoa(i) }

// TenantAPIIP is the ClusterIP of tenant i's Service api.
func TenantAPIIP(i int) string { return fmt.Sprintf("10.96.1.%d", 10+i) }

// TenantEndpointIP is the address of endpoint pool-j of tenant i.
func TenantEndpointIP(i, j int) string { return fmt.Sprintf("10.244.%d.%d", 10+i, 1+j) }

// TenantAliasTarget is where tenant i's Service alias points.
func TenantAliasTarget(i int) string {
	if i%2 == 0 {
		return "other-app-1.example.net"
	}
	return fmt.Sprintf("gone-%d.example.net", i)
}

// ApplyTenants creates the tenants. Objects that already exist are kept.
func ApplyTenants(ctx context.Context, cs kubernetes.Interface) error {
	for i := range TenantCount {
		if err := applyTenant(ctx, cs, i); err != nil {
			return err
		}
	}
	return nil
}

func applyTenant(ctx context.Context, cs kubernetes.Interface, i int) error {
	ns := TenantNamespace(i)
	if err := ensureNamespace(ctx, cs, ns); err != nil {
		return err
	}
	if err := createService(ctx, cs, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: TenantAPI, Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: TenantAPIIP(i), Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP},
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		}},
	}); err != nil {
		return err
	}
	if err := createService(ctx, cs, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: TenantPool, Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{
			{Name: "peer", Port: 7000, Protocol: corev1.ProtocolTCP},
		}},
	}); err != nil {
		return err
	}
	if err := CreateExternalNameService(ctx, cs, ns, TenantAlias, TenantAliasTarget(i)); err != nil {
		return err
	}
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: TenantPool + "-e2e", Namespace: ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: TenantPool, discoveryv1.LabelManagedBy: ManagedBy},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("peer"), Port: ptr(int32(7000)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for j := range TenantEndpoints {
		pod := TenantPool + "-" + strconv.Itoa(j)
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{TenantEndpointIP(i, j)},
			Hostname:   ptr(pod),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		})
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("endpointslice %s/%s: %w", ns, slice.Name, err)
	}
	return nil
}
