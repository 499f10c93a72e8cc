package scale

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// A restarted API server builds its watch caches afresh, from etcd's revision at that time.
// A client that resumes a watch from a resource version older than that is refused with
// 410 Gone ("too old resource version") and must relist: CoreDNS's informers then decode the
// whole collection again, which is the peak the OOM killer sees. A restart alone does not
// force it: if nothing was written since the client's last event, its resource version is
// the new cache's first and the watch just resumes. So the relist driver first writes
// objects nobody watches (ConfigMaps, created and deleted), which moves etcd's revision past
// every watcher's, then restarts the API server.

// ChurnNamespace holds the ConfigMaps Churn writes.
const ChurnNamespace = "scale-churn"

// Churn creates n ConfigMaps of about 1 KiB in ChurnNamespace and deletes them: 2n etcd
// revisions that no CoreDNS watch sees.
func Churn(ctx context.Context, cs kubernetes.Interface, n, workers int) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ChurnNamespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	cms := cs.CoreV1().ConfigMaps(ChurnNamespace)
	data := strings.Repeat("x", 1000)
	name := func(i int) string { return fmt.Sprintf("churn-%d", i) }
	if err := Each(ctx, n, workers, func(ctx context.Context, i int) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name(i)}, Data: map[string]string{"v": data}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating ConfigMaps: %w", err)
	}
	return Each(ctx, n, workers, func(ctx context.Context, i int) error {
		err := cms.Delete(ctx, name(i), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// WatchedResourceVersion is the resource version of the namespaces' watch cache now, from a
// list it serves (resourceVersion=0: no consistent read, which would ask etcd for progress
// and move every watcher's resource version on). A watcher of namespaces holds this one or an
// older one.
func WatchedResourceVersion(ctx context.Context, cs kubernetes.Interface) (string, error) {
	l, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1})
	if err != nil {
		return "", err
	}
	return l.ResourceVersion, nil
}

// ErrNotRefused is Refused's error when the API server accepted a watch from the old
// resource version: a client could resume, and need not relist.
var ErrNotRefused = errors.New("the API server resumed the watch from the old resource version")

// Refused watches namespaces from rv, as a client that held rv before a restart resumes, and
// returns the API server's refusal (410 Gone, "too old resource version: ..."). It retries
// while the API server's caches are not ready yet (429, or no connection), for up to timeout.
func Refused(ctx context.Context, cs kubernetes.Interface, rv string, timeout time.Duration) (string, error) {
	var msg string
	var last error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		msg, last = refusedOnce(ctx, cs, rv)
		return last == nil || errors.Is(last, ErrNotRefused), nil
	})
	if err != nil {
		return "", fmt.Errorf("watch from resourceVersion %s: %w (last: %v)", rv, err, last)
	}
	return msg, last
}

func refusedOnce(ctx context.Context, cs kubernetes.Interface, rv string) (string, error) {
	w, err := cs.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return describe(err), nil
		}
		return "", err
	}
	defer w.Stop()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return "", ErrNotRefused
		case ev, ok := <-w.ResultChan():
			if !ok {
				return "", errors.New("watch closed without an event")
			}
			if ev.Type != watch.Error {
				continue
			}
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return describe(err), nil
			}
			return "", err
		}
	}
}

// describe is an API error as "410 Expired: too old resource version: 5 (9)".
func describe(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		return fmt.Sprintf("%d %s: %s", s.Code, s.Reason, s.Message)
	}
	return err.Error()
}
