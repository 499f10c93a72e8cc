package clusterview

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fieldsel "k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/internal/fixture"
)

// startView runs the view against a fake clientset holding objs, with its own informers
// when ctl is nil.
func startView(t *testing.T, ctl Controller, clients bool, objs ...runtime.Object) (*View, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	v := New(Config{Client: cs, Clients: clients, UIDs: true})
	r := v.Start(ctl)
	t.Cleanup(r.Stop)
	for deadline := time.Now().Add(5 * time.Second); !v.Synced(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("view did not sync")
		}
	}
	return v, cs
}

func TestViewFromInformers(t *testing.T) {
	v, cs := startView(t, nil, true, fixture.Incident()...)

	if got := v.Pod(netip.MustParseAddr("10.244.1.5")); got != "new-namespace-1/client" {
		t.Errorf("pod(10.244.1.5) = %q", got)
	}
	if services, aliases := v.Homes("my-app", inClusterLocal); !slices.Equal(services, []string{"legacy", "new-namespace-2"}) || aliases != nil {
		t.Errorf("homes(my-app) = %v, %v", services, aliases)
	}
	// An endpoint with a hostname answers to it, never to its Pod's name.
	o := v.services.(*owned)
	if !o.hasEndpoint("new-namespace-1", "db", "primary") || o.hasEndpoint("new-namespace-1", "db", "db-pod-primary") {
		t.Error("endpoint primary of db: want its hostname, not its pod name")
	}
	if !o.hasService("db", "primary") || o.hasService("db", "replica") {
		t.Error("services wrong")
	}
	if !v.HasNamespace("my-app") || v.HasNamespace("other-app-1") {
		t.Error("namespaces wrong")
	}
	if uid, ok := v.PodUID("new-namespace-1/client"); !ok || uid != "uid-client" {
		t.Errorf("PodUID(new-namespace-1/client) = %q, %v", uid, ok)
	}

	// Changes reach the view through the watch.
	ctx := context.Background()
	if err := cs.CoreV1().Pods("new-namespace-1").Delete(ctx, "deleted-later", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Services("legacy").Delete(ctx, "my-app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, func() bool {
		where, _ := v.Homes("my-app", inClusterLocal)
		return v.Pod(netip.MustParseAddr("10.244.1.6")) == "" && slices.Equal(where, []string{"new-namespace-2"})
	})
}

func TestViewWithoutClients(t *testing.T) {
	v, _ := startView(t, nil, false, fixture.Incident()...)
	if got := v.Pod(netip.MustParseAddr("10.244.1.5")); got != "" {
		t.Errorf("clients off, yet pod(10.244.1.5) = %q", got)
	}
}

func TestViewUpdates(t *testing.T) {
	ps := newPodStore(false)
	p := &podObj{key: "a/p", addrs: addrs("10.0.0.1")}
	ps.set(p, true)
	ps.set(&podObj{key: "a/p", addrs: addrs("10.0.0.2")}, true) // new IP
	if ps.pod(netip.MustParseAddr("10.0.0.1")) != "" || ps.pod(netip.MustParseAddr("10.0.0.2")) != "a/p" {
		t.Error("a Pod's old address must be forgotten when it changes")
	}
	ps.set(p, false)
	if len(ps.byAddr) != 0 || len(ps.byKey) != 0 {
		t.Errorf("deleted Pod left %v %v", ps.byAddr, ps.byKey)
	}

	v := newOwned()
	// Two slices naming one endpoint: it goes only when both do.
	s1 := &sliceObj{meta: meta{namespace: "c", name: "s1"}, service: "b", names: []string{"a"}}
	s2 := &sliceObj{meta: meta{namespace: "c", name: "s2"}, service: "b", names: []string{"a", "x"}}
	v.setSlice(s1, true)
	v.setSlice(s2, true)
	v.setSlice(s2, false)
	if !v.hasEndpoint("c", "b", "a") || v.hasEndpoint("c", "b", "x") {
		t.Error("endpoint counts across slices are wrong")
	}
	v.setSlice(s1, false)
	if len(v.endpoints) != 0 || len(v.slices) != 0 {
		t.Errorf("deleted slices left %v %v", v.endpoints, v.slices)
	}

	for _, ns := range []string{"z", "a", "m"} {
		v.setService(&serviceObj{meta: meta{namespace: ns, name: "svc"}}, true)
	}
	v.setService(&serviceObj{meta: meta{namespace: "a", name: "svc"}}, true) // an update
	// An ExternalName into the cluster is an alias: the advice names the Service it leads to.
	v.setService(&serviceObj{meta: meta{namespace: "b", name: "svc"}, externalName: "svc.m.svc.cluster.local"}, true)
	v.setService(&serviceObj{meta: meta{namespace: "c", name: "svc"}, externalName: "svc.example.net"}, true)
	if services, aliases := (&View{services: v}).Homes("svc", inClusterLocal); !slices.Equal(services, []string{"a", "c", "m", "z"}) || !slices.Equal(aliases, []string{"b"}) {
		t.Errorf("homes = %v, aliases %v; want a c m z, then the alias b", services, aliases)
	}
	v.setService(&serviceObj{meta: meta{namespace: "b", name: "svc"}}, false)
	v.setService(&serviceObj{meta: meta{namespace: "c", name: "svc"}}, false)
	for _, ns := range []string{"z", "a", "m", "m"} {
		v.setService(&serviceObj{meta: meta{namespace: ns, name: "svc"}}, false)
	}
	if len(v.byName) != 0 || len(v.services) != 0 {
		t.Errorf("deleted Services left %v %v", v.byName, v.services)
	}
}

// TestViewConcurrent reads on the query path while the informers write; run with -race.
func TestViewConcurrent(t *testing.T) {
	o, ps := newOwned(), newPodStore(false)
	v := &View{services: o, pods: ps}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			p := &podObj{key: "a/p", addrs: addrs("10.0.0.1")}
			s := &sliceObj{meta: meta{namespace: "c", name: "s"}, service: "b", names: []string{"a"}}
			ps.set(p, i%2 == 0)
			o.setSlice(s, i%2 == 0)
			o.setService(&serviceObj{meta: meta{namespace: "b", name: "a"}}, i%2 == 0)
		}
	}()
	n := clusterdns.Name{Shape: clusterdns.EndpointName, Namespace: "c", Service: "b", Endpoint: "a"}
	for {
		select {
		case <-done:
			return
		default:
			v.Pod(netip.MustParseAddr("10.0.0.1"))
			v.Shadowed(n)
		}
	}
}

// The view keeps the endpoint names that could be a Service's, by the rule cluster DNS names endpoints with.
func TestSliceNames(t *testing.T) {
	ready, notReady := true, false
	pod := &corev1.ObjectReference{Kind: "Pod", Name: "web-7f9c"}
	tests := []struct {
		name string
		ep   discovery.Endpoint
		want []string
	}{
		{"hostname", discovery.Endpoint{Hostname: ptr("web-0"), TargetRef: pod, Addresses: []string{"10.244.3.1"}}, []string{"web-0"}},
		{"pod name, for endpoint_pod_names", discovery.Endpoint{TargetRef: pod, Addresses: []string{"10.244.3.2"}}, []string{"web-7f9c"}},
		{"dashed IPv4 is never a Service name", discovery.Endpoint{Addresses: []string{"10.244.3.3"}}, nil},
		{"not ready", discovery.Endpoint{Hostname: ptr("web-1"), Addresses: []string{"10.244.3.4"}, Conditions: discovery.EndpointConditions{Ready: &notReady}}, nil},
		{"ready", discovery.Endpoint{Hostname: ptr("Web-2"), Addresses: []string{"10.244.3.5"}, Conditions: discovery.EndpointConditions{Ready: &ready}}, []string{"web-2"}},
		{"not a pod", discovery.Endpoint{TargetRef: &corev1.ObjectReference{Kind: "Node", Name: "node-1"}, Addresses: []string{"10.0.0.1"}}, nil},
	}
	for _, tc := range tests {
		s := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "nginx-abc",
			Labels: map[string]string{discovery.LabelServiceName: "nginx"}}, Endpoints: []discovery.Endpoint{tc.ep}}
		o, err := toSmall(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.(*sliceObj).names; !slices.Equal(got, tc.want) {
			t.Errorf("%s: names %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Only a live Pod that owns its address names a client: a host-network Pod carries its
// node's, a finished Pod's may be reused already, and an address two live Pods claim is nobody's.
func TestPodIdentity(t *testing.T) {
	pod := func(name, ip string, change func(*corev1.Pod)) *podObj {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}}
		if change != nil {
			change(p)
		}
		return toPod(p, false)
	}
	hostNetwork := func(p *corev1.Pod) { p.Spec.HostNetwork = true }
	succeeded := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }

	v := newPodStore(false)
	steps := []struct {
		what    string
		pod     *podObj
		present bool
		ip      string
		want    string
	}{
		{"a live Pod", pod("web", "10.244.1.5", nil), true, "10.244.1.5", "ns/web"},
		{"a host-network Pod on the same node address", pod("agent", "10.244.1.5", hostNetwork), true, "10.244.1.5", "ns/web"},
		{"a finished Pod that held it before", pod("job", "10.244.1.5", succeeded), true, "10.244.1.5", "ns/web"},
		{"a failed one", pod("crashed", "10.244.1.5", failed), true, "10.244.1.5", "ns/web"},
		{"a second live Pod claims it", pod("twin", "10.244.1.5", nil), true, "10.244.1.5", ""},
		{"a third", pod("triplet", "10.244.1.5", nil), true, "10.244.1.5", ""},
		{"one of three leaves", pod("twin", "10.244.1.5", nil), false, "10.244.1.5", ""},
		{"the last but one leaves", pod("triplet", "10.244.1.5", nil), false, "10.244.1.5", "ns/web"},
		{"the owner finishes", pod("web", "10.244.1.5", succeeded), true, "10.244.1.5", ""},
		{"a host-network Pod alone", pod("agent", "10.0.0.7", hostNetwork), true, "10.0.0.7", ""},
		// Addresses are compared parsed, whatever their text.
		{"an IPv6 Pod", pod("v6", "fd00:0:0::0:1", nil), true, "fd00::1", "ns/v6"},
		{"an IPv4-mapped address", pod("mapped", "::ffff:10.0.0.8", nil), true, "10.0.0.8", "ns/mapped"},
		{"the IPv6 Pod leaves", pod("v6", "fd00::1", nil), false, "fd00::1", ""},
		{"the mapped one leaves", pod("mapped", "::ffff:10.0.0.8", nil), false, "10.0.0.8", ""},
	}
	if got := pod("odd", "10.0.0.300", nil).addrs; got != (podAddrs{}) {
		t.Errorf("an address that does not parse gave %v", got)
	}
	for _, s := range steps {
		v.set(s.pod, s.present)
		if got := v.pod(netip.MustParseAddr(s.ip)); got != s.want {
			t.Errorf("%s: pod(%s) = %q, want %q", s.what, s.ip, got, s.want)
		}
	}
	if len(v.byAddr) != 0 || len(v.shared) != 0 || len(v.byKey) != 0 {
		t.Errorf("left behind: byAddr %v, shared %v, byKey %v", v.byAddr, v.shared, v.byKey)
	}
}

func ptr[T any](v T) *T { return &v }

func addrs(ips ...string) podAddrs {
	var o podObj
	for _, ip := range ips {
		o.addAddr(ip)
	}
	return o.addrs
}

func inClusterLocal(target string) bool { return strings.HasSuffix(target, ".cluster.local") }

// The query path reads Services and endpoints only through shadowed; tests read them one by one.

// hasService reports whether Service name exists in namespace ns.
func (o *owned) hasService(ns, name string) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	_, ok := o.services[objectKey{ns, name}]
	return ok
}

// hasEndpoint reports whether Service service in namespace ns has an endpoint called name.
func (o *owned) hasEndpoint(ns, service, name string) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.endpoints[objectKey{ns, service}][name] > 0
}

// A node-local view watches only its node's Pods: the field selector goes with every list
// and watch of Pods, so the API server sends no other Pod.
func TestPodFieldSelector(t *testing.T) {
	pod := func(name, node, ip string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}},
		}
	}
	cs := fake.NewClientset(pod("here", "node-1", "10.244.1.5"), pod("there", "node-2", "10.244.2.6"))
	var mu sync.Mutex
	var asked []string
	record := func(a k8stesting.Action) fieldsel.Selector {
		var sel fieldsel.Selector
		switch a := a.(type) {
		case k8stesting.ListAction:
			sel = a.GetListRestrictions().Fields
		case k8stesting.WatchAction:
			sel = a.GetWatchRestrictions().Fields
		}
		mu.Lock()
		asked = append(asked, a.GetVerb()+" "+sel.String())
		mu.Unlock()
		return sel
	}
	// The fake clientset ignores field selectors: this reactor answers as the API server does.
	cs.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sel := record(a)
		all, err := cs.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), "")
		if err != nil {
			return true, nil, err
		}
		list := &corev1.PodList{ListMeta: all.(*corev1.PodList).ListMeta}
		for _, p := range all.(*corev1.PodList).Items {
			if sel.Matches(fieldsel.Set{"spec.nodeName": p.Spec.NodeName}) {
				list.Items = append(list.Items, p)
			}
		}
		return true, list, nil
	})
	cs.PrependWatchReactor("pods", func(a k8stesting.Action) (bool, watch.Interface, error) {
		record(a)
		return false, nil, nil
	})
	v := New(Config{Client: cs, Clients: true, PodFieldSelector: "spec.nodeName=node-1"})
	r := v.Start(nil)
	t.Cleanup(r.Stop)
	for deadline := time.Now().Add(5 * time.Second); !v.Synced(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("view did not sync")
		}
	}
	if got := v.Pod(netip.MustParseAddr("10.244.1.5")); got != "ns/here" {
		t.Errorf("Pod(10.244.1.5) = %q, want ns/here", got)
	}
	if got := v.Pod(netip.MustParseAddr("10.244.2.6")); got != "" {
		t.Errorf("Pod(10.244.2.6) = %q, want none: it runs on another node", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) == 0 {
		t.Fatal("no list or watch of Pods")
	}
	for _, a := range asked {
		if !strings.HasSuffix(a, " spec.nodeName=node-1") {
			t.Errorf("%q: want every request for Pods with the field selector spec.nodeName=node-1", a)
		}
	}
}
