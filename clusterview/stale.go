package clusterview

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How the view learns that it is cut off. A watch that the API server refuses (403 after
// RBAC changed) or a server that is down shows as a failed request; a hung etcd does not,
// since watches from the API server's cache just go quiet. So the view also reads one
// object every ProbeEvery, as a consistent read that needs etcd, and the answer sets the
// view fresh or stale. One request per interval per replica, whatever the API server's
// state: it never retries faster than that, and the watches keep client-go's back-off.
const (
	ProbeEvery   = 20 * time.Second
	probeTimeout = 10 * time.Second
)

// answered records how a request of the view's own went: a failure marks the view stale,
// and an answer fresh again unless the last probe failed (a watch served from the API
// server's cache can start while etcd hangs) or Pods came that could not be read. An expired
// resource version is not a failure: the reflector lists again, as it should after an API
// server restart.
func (v *View) answered(ctx context.Context, err error) {
	switch {
	case ctx.Err() != nil || apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
	case errors.As(err, new(unreadable)):
		v.unread.Store(true)
		v.setStale(true, err)
	case err != nil:
		v.setStale(true, err)
	case !v.probeFailed.Load() && !v.unread.Load():
		v.setStale(false, nil)
	}
}

// readPods records that Pods were decoded: a view that could not read them before is fresh
// again, unless the last probe failed.
func (v *View) readPods() {
	if v.unread.Swap(false) && !v.probeFailed.Load() {
		v.setStale(false, nil)
	}
}

// probe reads one Service, and one Pod when it watches Pods, every ProbeEvery until ctx ends.
func (v *View) probe(ctx context.Context) {
	t := time.NewTicker(v.probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := v.read(ctx)
		if ctx.Err() != nil {
			return
		}
		v.probeFailed.Store(err != nil)
		v.setStale(err != nil || v.unread.Load(), err)
	}
}

func (v *View) read(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	one := metav1.ListOptions{Limit: 1}
	_, err := v.cfg.Client.CoreV1().Services(metav1.NamespaceAll).List(ctx, one)
	if err == nil && v.pods != nil {
		_, err = v.cfg.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, one)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("no answer from the API server in " + probeTimeout.String() + " (is etcd healthy?)")
	}
	return err
}

// setStale records whether the view is cut off from the API server, and says so on a change.
func (v *View) setStale(stale bool, err error) {
	if v.stale.Swap(stale) == stale {
		return
	}
	switch {
	case stale && errors.As(err, new(unreadable)):
		warnErr("cluster view cannot read the Pods the API server sends; client names and 'allow client' use the Pods last read until it can (is a proxy between CoreDNS and the API server changing them?)", err)
	case stale:
		warnErr("cluster view cut off from the API server; client names, advice and endpoint shadow checks use its last known state until it is back (check the API server, etcd, the network to them, and CoreDNS's RBAC)", err)
	default:
		log.Info("cluster view in touch with the API server again")
	}
	if v.cfg.OnStale != nil {
		v.cfg.OnStale(stale)
	}
}
