package clusterview

import (
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nsguard/nsguard/internal/fixture"
)

// TestStaleFromProbe: a 403 or a server error on the probe's read marks the view stale, and
// the next good read fresh; a failing API server sees one probe per interval, no more.
func TestStaleFromProbe(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "", nil)},
		{"timeout", apierrors.NewTimeoutError("etcd", 1)},
		{"unavailable", apierrors.NewServiceUnavailable("starting")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(fixture.Incident()...)
			var failing atomic.Bool
			var lists atomic.Int64
			cs.PrependReactor("list", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
				if failing.Load() {
					lists.Add(1)
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			var changes []bool
			changed := make(chan bool, 10)
			v := New(Config{Client: cs, Clients: true, OnStale: func(s bool) { changed <- s }})
			v.probeEvery = 20 * time.Millisecond
			r := v.Start(nil)
			defer r.Stop()

			failing.Store(true)
			changes = append(changes, <-changed)
			if !v.Stale() {
				t.Fatal("not stale after a failed read")
			}
			time.Sleep(200 * time.Millisecond) // ten intervals
			if n := lists.Load(); n > 12 {
				t.Errorf("%d reads of a failing API server in ten probe intervals; want one per interval", n)
			}
			failing.Store(false)
			changes = append(changes, <-changed)
			if v.Stale() || len(changes) != 2 || !changes[0] || changes[1] {
				t.Errorf("stale %v after a good read; changes %v", v.Stale(), changes)
			}
		})
	}
}

// TestStaleFromPodWatch: a Pod watch the API server refuses marks the view stale at once,
// not only at the next probe.
func TestStaleFromPodWatch(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", nil)
	})
	v := New(Config{Client: cs, Clients: true})
	r := v.Start(nil)
	defer r.Stop()
	deadline := time.Now().Add(5 * time.Second)
	for !v.Stale() {
		if time.Now().After(deadline) {
			t.Fatal("a refused Pod watch did not mark the view stale")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPodRelist: a relist replaces the Pods; one it does not name is gone, and an address
// that moved to another Pod names the new one.
func TestPodRelist(t *testing.T) {
	pod := func(name, ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIPs: []corev1.PodIP{{IP: ip}}}}
	}
	s := newPodStore(false)
	if err := s.Replace([]any{pod("a", "10.0.0.1"), pod("b", "10.0.0.2")}, "1"); err != nil {
		t.Fatal(err)
	}
	// As the reflector's streamed list hands them over: already small.
	if err := s.Replace([]any{s.small(pod("c", "10.0.0.1"))}, "9"); err != nil {
		t.Fatal(err)
	}
	for ip, want := range map[string]string{"10.0.0.1": "ns/c", "10.0.0.2": ""} {
		if got := s.pod(netip.MustParseAddr(ip)); got != want {
			t.Errorf("after relist pod(%s) = %q, want %q", ip, got, want)
		}
	}
	if len(s.byKey) != 1 {
		t.Errorf("relist left %v", s.byKey)
	}
}
