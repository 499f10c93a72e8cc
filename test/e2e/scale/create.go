package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nsguard/nsguard/test/e2e/cluster"
)

// UserAgent is what this package's own requests carry, so that the watch counts leave them out.
const UserAgent = "nsguard-scale"

// DefaultWorkers is how many requests Create keeps in flight: on 2 cores the API server, not
// the client, is then the bottleneck.
const DefaultWorkers = 48

// Client is an admin clientset for bulk work: protobuf, a high client-side rate limit, and
// UserAgent.
func Client(cp *cluster.ControlPlane) (kubernetes.Interface, error) {
	rc := cp.RESTConfig()
	rc.QPS, rc.Burst = 5000, 10000
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.UserAgent = UserAgent
	return kubernetes.NewForConfig(rc)
}

// Timing is how long one kind of object took to create.
type Timing struct {
	What string
	N    int
	Took time.Duration
}

func (t Timing) String() string {
	return fmt.Sprintf("%d %s in %v (%.0f/s)", t.N, t.What, t.Took.Round(100*time.Millisecond), float64(t.N)/t.Took.Seconds())
}

// Logf is a printf-style logger such as testing.T.Logf; nil logs nothing.
type Logf func(format string, args ...any)

func (l Logf) printf(format string, args ...any) {
	if l != nil {
		l(format, args...)
	}
}

// Create makes the cluster of size in the API server behind cs with workers requests in
// flight: the namespaces, then each Service with its EndpointSlice, then each Pod (created,
// then its status set as kubelet would: there is no kubelet). It returns how long each step
// took. Start from an empty cluster, or Delete first: an object that exists is taken as one
// a write that timed out made.
func Create(ctx context.Context, cs kubernetes.Interface, size Size, workers int, logf Logf) ([]Timing, error) {
	if err := size.validate(); err != nil {
		return nil, err
	}
	create := func(m string) metav1.CreateOptions { return metav1.CreateOptions{FieldManager: m} }
	steps := []struct {
		what string
		n    int
		do   func(ctx context.Context, i int) error
	}{
		{"namespaces", size.Namespaces, func(ctx context.Context, j int) error {
			return retry(ctx, func() error {
				_, err := cs.CoreV1().Namespaces().Create(ctx, NamespaceObject(j), create(Helm))
				return ignoreExists(err)
			})
		}},
		{"Services with their EndpointSlice", size.Services(), func(ctx context.Context, k int) error {
			ns := Namespace(k / size.ServicesPerNamespace)
			var svc *corev1.Service
			if err := retry(ctx, func() (err error) {
				svc, err = cs.CoreV1().Services(ns).Create(ctx, size.ServiceObject(k), create(Helm))
				if apierrors.IsAlreadyExists(err) { // a try that timed out was written after all
					svc, err = cs.CoreV1().Services(ns).Get(ctx, ServiceName(k), metav1.GetOptions{})
				}
				return err
			}); err != nil {
				return err
			}
			return retry(ctx, func() error {
				_, err := cs.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, size.EndpointSliceObject(k, string(svc.UID)), create(ControllerManager))
				return ignoreExists(err)
			})
		}},
		{"Pods (created, then status)", size.Pods(), func(ctx context.Context, p int) error {
			pod := size.PodObject(p)
			var got *corev1.Pod
			if err := retry(ctx, func() (err error) {
				got, err = cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, create(ControllerManager))
				if apierrors.IsAlreadyExists(err) {
					got, err = cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
				}
				return err
			}); err != nil {
				return err
			}
			got.Status = size.PodStatus(p)
			return retry(ctx, func() error {
				_, err := cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: Kubelet})
				if apierrors.IsConflict(err) { // a try that timed out was written after all
					return nil
				}
				return err
			})
		}},
	}
	var out []Timing
	for _, s := range steps {
		start := time.Now()
		if err := Each(ctx, s.n, workers, s.do); err != nil {
			return out, fmt.Errorf("creating %s: %w", s.what, err)
		}
		t := Timing{What: s.what, N: s.n, Took: time.Since(start)}
		logf.printf("created %s", t)
		out = append(out, t)
	}
	return out, nil
}

// retry runs do again, up to 5 times in all, while the API server says it is too busy to
// answer in time: on a machine shared with other work a write can time out now and then,
// and a run of an hour must not end for one.
func retry(ctx context.Context, do func() error) error {
	var err error
	for try := range 5 {
		if err = do(); err == nil || !(apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
			apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err)) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(try+1) * time.Second):
		}
	}
	return err
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// Sizes are a stored Pod's sizes in bytes.
type Sizes struct {
	Proto, JSON        int // whole, as etcd and a watch stream carry it (protobuf), and in JSON
	ManagedFieldsProto int // of which managedFields, in protobuf
}

// PodSize reads Pod p back from the API server, managedFields and all, and returns its sizes.
func PodSize(ctx context.Context, cs kubernetes.Interface, size Size, p int) (Sizes, *corev1.Pod, error) {
	pod, err := cs.CoreV1().Pods(size.PodObject(p).Namespace).Get(ctx, size.PodName(p), metav1.GetOptions{})
	if err != nil {
		return Sizes{}, nil, err
	}
	b, err := pod.Marshal()
	if err != nil {
		return Sizes{}, nil, err
	}
	j, err := json.Marshal(pod)
	if err != nil {
		return Sizes{}, nil, err
	}
	bare := pod.DeepCopy()
	bare.ManagedFields = nil
	return Sizes{Proto: len(b), JSON: len(j), ManagedFieldsProto: len(b) - bare.Size()}, pod, nil
}

// Delete removes what Create made, whatever part of it exists (see DeleteNamespace).
func Delete(ctx context.Context, cs kubernetes.Interface, size Size, workers int) error {
	return Each(ctx, size.Namespaces, workers, func(ctx context.Context, j int) error {
		return DeleteNamespace(ctx, cs, Namespace(j))
	})
}

// DeleteNamespace removes namespace ns and what it holds. With no namespace controller a
// deleted namespace would stay Terminating with all its objects, so it is emptied, deleted
// and finalized.
func DeleteNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}
	all := metav1.ListOptions{}
	if err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, now, all); err != nil {
		return fmt.Errorf("pods in %s: %w", ns, err)
	}
	if err := cs.DiscoveryV1().EndpointSlices(ns).DeleteCollection(ctx, now, all); err != nil {
		return fmt.Errorf("endpointslices in %s: %w", ns, err)
	}
	svcs, err := cs.CoreV1().Services(ns).List(ctx, all) // Services have no collection delete
	if err != nil {
		return fmt.Errorf("services in %s: %w", ns, err)
	}
	for _, s := range svcs.Items {
		if err := cs.CoreV1().Services(ns).Delete(ctx, s.Name, now); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("service %s/%s: %w", ns, s.Name, err)
		}
	}
	nsc := cs.CoreV1().Namespaces()
	if err := nsc.Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("namespace %s: %w", ns, err)
	}
	for range 5 { // the API server drops the namespace once its finalizers are gone
		n, err := nsc.Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		n.Spec.Finalizers = nil
		if _, err := nsc.Finalize(ctx, n, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("finalize namespace %s: %w", ns, err)
		}
	}
	return fmt.Errorf("namespace %s still there after finalizing", ns)
}

// Each runs do(ctx, 0) .. do(ctx, n-1) on workers goroutines and returns the first error;
// after an error no new call starts.
func Each(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := do(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}
