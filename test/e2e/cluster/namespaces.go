package cluster

import (
	"context"
	"fmt"
	"path"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
)

// FinalizeNamespaceDeletion deletes namespace name and does what the absent
// namespace controller would: it deletes every namespaced object in it (else
// Services would still be served from etcd), PUTs /finalize with empty
// spec.finalizers, and waits until the namespace is gone.
func FinalizeNamespaceDeletion(ctx context.Context, cs kubernetes.Interface, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	nsc := cs.CoreV1().Namespaces()
	if err := nsc.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	if err := deleteContents(ctx, cs, name); err != nil {
		return err
	}
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ns, err := nsc.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("get namespace %s: %w", name, err)
		}
		if len(ns.Spec.Finalizers) > 0 {
			ns.Spec.Finalizers = nil
			_, err := nsc.Finalize(ctx, ns, metav1.UpdateOptions{})
			if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return false, fmt.Errorf("finalize namespace %s: %w", name, err)
			}
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("namespace %s still present: %w", name, err)
	}
	return err
}

// deleteContents issues a collection DELETE for every namespaced resource
// type that supports it, as the namespace controller does.
func deleteContents(ctx context.Context, cs kubernetes.Interface, ns string) error {
	lists, err := discovery.ServerPreferredNamespacedResources(cs.Discovery())
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	rc := cs.Discovery().RESTClient()
	for _, list := range lists {
		prefix := "/apis/" + list.GroupVersion
		if list.GroupVersion == "v1" {
			prefix = "/api/v1"
		}
		for _, r := range list.APIResources {
			if !slices.Contains(r.Verbs, "deletecollection") {
				continue
			}
			err := rc.Delete().AbsPath(path.Join(prefix, "namespaces", ns, r.Name)).
				Param("gracePeriodSeconds", "0"). // no kubelet will ever confirm a pod's exit
				Param("propagationPolicy", "Background").
				Do(ctx).Error()
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				return fmt.Errorf("delete %s in %s: %w", r.Name, ns, err)
			}
		}
	}
	return nil
}
