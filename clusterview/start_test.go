package clusterview

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Only a request that sends every Pod again, after the first sync, waits for the kubernetes
// plugin's relist: the first list already waits for its sync, and a watch that resumes is cheap.
func TestIsRelist(t *testing.T) {
	initial, resume := metav1.ListOptions{SendInitialEvents: ptr(true)}, metav1.ListOptions{ResourceVersion: "42"}
	for _, tc := range []struct {
		name           string
		synced, isList bool
		opts           metav1.ListOptions
		want           bool
	}{
		{"first streamed list", false, false, initial, false},
		{"first list", false, true, metav1.ListOptions{}, false},
		{"streamed list after sync", true, false, initial, true},
		{"list after sync", true, true, metav1.ListOptions{}, true},
		{"watch resumed", true, false, resume, false},
		{"streamed list turned off", true, false, metav1.ListOptions{SendInitialEvents: ptr(false)}, false},
	} {
		if got := isRelist(tc.synced, tc.isList, tc.opts); got != tc.want {
			t.Errorf("%s: isRelist = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A held relist waits for a collection that begins after its hold: one that ends within the
// first second may have begun before, and does not count; none at all, and it goes on after
// CollectionWait; then it waits SweepWait before it lists.
func TestHoldRelistWaitsForACollection(t *testing.T) {
	var cycles atomic.Uint64
	const sweep = 500 * time.Millisecond
	v := &View{pods: newPodStore(false), gcCycles: cycles.Load, sweepWait: sweep}
	v.pods.synced.Store(true)
	done := make(chan error, 1)
	go func() { done <- v.holdRelist(context.Background(), true, metav1.ListOptions{}, time.Millisecond) }()
	time.Sleep(300 * time.Millisecond)
	cycles.Add(1) // ends in the first second
	select {
	case <-done:
		t.Fatal("relisted after a collection that may have begun before the hold ended")
	case <-time.After(1200 * time.Millisecond):
	}
	cycles.Add(1)
	collected := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(collected); waited < sweep {
			t.Errorf("relisted %v after the collection, before the sweep's %v", waited, sweep)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("still holding after a collection")
	}

	// gcCycles reads the runtime's own count.
	before := gcCycles()
	runtime.GC()
	if after := gcCycles(); after <= before {
		t.Errorf("gcCycles %d after a collection, %d before", after, before)
	}
}

// A held relist ends with the view: a reload or stop must not wait for it.
func TestHoldRelistEndsWithContext(t *testing.T) {
	v := &View{pods: newPodStore(false)}
	v.pods.synced.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- v.holdRelist(ctx, true, metav1.ListOptions{}, time.Hour) }()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("holdRelist returned no error after its context ended")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("holdRelist still waiting after its context ended")
	}
	if err := v.holdRelist(context.Background(), true, metav1.ListOptions{}, 0); err != nil {
		t.Errorf("without a hold: %v", err)
	}
}
