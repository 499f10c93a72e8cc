package main

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// createBenchObjects adds the bench's namespaces and ClusterIP Services, each with a named
// port for SRV questions, to the incident's objects; the API server picks the addresses.
func createBenchObjects(ctx context.Context, cs kubernetes.Interface) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range benchNamespaces {
		g.Go(func() error {
			ns := benchNamespace(i)
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("namespace %s: %w", ns, err)
			}
			for j := range benchServices {
				svc := &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: benchService(j), Namespace: ns},
					Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
				}
				if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("service %s/%s: %w", ns, svc.Name, err)
				}
			}
			return nil
		})
	}
	return g.Wait()
}
