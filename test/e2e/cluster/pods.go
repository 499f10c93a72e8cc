package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// CreateRunningPod creates Pod ns/name (its namespace too) and sets its status to Running
// with podIP, as kubelet would once the pod's network is up: there is no kubelet, and CoreDNS
// and nsguard read only the status. An existing Pod is kept and its status set again.
func CreateRunningPod(ctx context.Context, cs kubernetes.Interface, ns, name, podIP string) error {
	if err := ensureNamespace(ctx, cs, ns); err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: ClientImage}}},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return fmt.Errorf("pod %s/%s: %w", ns, name, err)
	}
	patch := fmt.Appendf(nil, `{"status":{"phase":"Running","podIP":%q,"podIPs":[{"ip":%q}]}}`, podIP, podIP)
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("pod %s/%s status: %w", ns, name, err)
	}
	return nil
}
