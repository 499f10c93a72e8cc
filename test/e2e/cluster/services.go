package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CreateExternalNameService creates Service ns/name of type ExternalName
// pointing at target (an alias, as in the incident). An existing one is kept.
func CreateExternalNameService(ctx context.Context, cs kubernetes.Interface, ns, name, target string) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: target},
	}
	return createService(ctx, cs, svc)
}
