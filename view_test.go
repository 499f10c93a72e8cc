package nsguard

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsguard/nsguard/clusterdns"
)

// The cluster of the incident, plus a shadow: a client in new-namespace-1 that types
// "primary.db" means Service primary in namespace db, but headless Service db in its own
// namespace has an endpoint called primary. And a StatefulSet web in namespace shop, whose
// "web-0.nginx" must never be flagged: there is no namespace or Service that it could mean.
func incidentObjects() []runtime.Object {
	ns := func(name string) runtime.Object {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	svc := func(ns, name string, spec corev1.ServiceSpec) runtime.Object {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	}
	slice := func(ns, svc string, hostnames ...string) runtime.Object {
		s := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-abc",
			Labels: map[string]string{discovery.LabelServiceName: svc}}}
		for _, h := range hostnames {
			s.Endpoints = append(s.Endpoints, discovery.Endpoint{Hostname: &h, Addresses: []string{"10.244.3.1"},
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: svc + "-pod-" + h}})
		}
		return s
	}
	pod := func(ns, name, ip string) runtime.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: corev1.PodStatus{PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}}
	}
	headless := corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}
	return []runtime.Object{
		ns("my-app"), ns("new-namespace-1"), ns("new-namespace-2"), ns("db"), ns("shop"),
		svc("new-namespace-2", "my-app", corev1.ServiceSpec{ClusterIP: "10.96.0.20"}),
		svc("legacy", "my-app", corev1.ServiceSpec{ClusterIP: "10.96.0.21"}),
		svc("my-app", "other-app-1", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "other-app-1.example.net"}),
		svc("new-namespace-1", "db", headless), slice("new-namespace-1", "db", "primary", "replica"),
		svc("db", "primary", corev1.ServiceSpec{ClusterIP: "10.96.0.30"}),
		svc("shop", "nginx", headless), slice("shop", "nginx", "web-0", "web-1"),
		pod("new-namespace-1", "client", "10.244.1.5"),
		pod("new-namespace-1", "deleted-later", "10.244.1.6"),
	}
}

// startView runs the real watcher against a fake clientset holding objs.
func startView(t *testing.T, clients bool, objs ...runtime.Object) (*view, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	v := newView()
	w := &watcher{client: cs, view: v, clients: clients}
	if err := w.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.stop() })
	if !v.synced.Load() {
		t.Fatal("view did not sync")
	}
	return v, cs
}

func TestViewFromInformers(t *testing.T) {
	v, cs := startView(t, true, incidentObjects()...)

	if got := v.pod(netip.MustParseAddr("10.244.1.5")); got != "new-namespace-1/client" {
		t.Errorf("pod(10.244.1.5) = %q", got)
	}
	if services, aliases := v.homes("my-app", inClusterLocal); !slices.Equal(services, []string{"legacy", "new-namespace-2"}) || aliases != nil {
		t.Errorf("homes(my-app) = %v, %v", services, aliases)
	}
	// An endpoint with a hostname answers to it, never to its Pod's name.
	if !v.hasEndpoint("new-namespace-1", "db", "primary") || v.hasEndpoint("new-namespace-1", "db", "db-pod-primary") {
		t.Error("endpoint primary of db: want its hostname, not its pod name")
	}
	if !v.hasService("db", "primary") || v.hasService("db", "replica") {
		t.Error("services wrong")
	}

	// Changes reach the view through the watch.
	ctx := context.Background()
	if err := cs.CoreV1().Pods("new-namespace-1").Delete(ctx, "deleted-later", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Services("legacy").Delete(ctx, "my-app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() bool {
		where, _ := v.homes("my-app", inClusterLocal)
		return v.pod(netip.MustParseAddr("10.244.1.6")) == "" && slices.Equal(where, []string{"new-namespace-2"})
	})
}

func TestViewWithoutClients(t *testing.T) {
	v, _ := startView(t, false, incidentObjects()...)
	if got := v.pod(netip.MustParseAddr("10.244.1.5")); got != "" {
		t.Errorf("clients off, yet pod(10.244.1.5) = %q", got)
	}
}

func TestViewUpdates(t *testing.T) {
	v := newView()
	p := &podObj{meta: meta{namespace: "a", name: "p"}, ips: addrs("10.0.0.1")}
	v.setPod(p, true)
	v.setPod(&podObj{meta: meta{namespace: "a", name: "p"}, ips: addrs("10.0.0.2")}, true) // new IP
	if v.pod(netip.MustParseAddr("10.0.0.1")) != "" || v.pod(netip.MustParseAddr("10.0.0.2")) != "a/p" {
		t.Error("a Pod's old address must be forgotten when it changes")
	}
	v.setPod(p, false)
	if len(v.pods) != 0 || len(v.livePods) != 0 {
		t.Errorf("deleted Pod left %v %v", v.pods, v.livePods)
	}

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
	if services, aliases := v.homes("svc", inClusterLocal); !slices.Equal(services, []string{"a", "c", "m", "z"}) || !slices.Equal(aliases, []string{"b"}) {
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
	v := newView()
	v.synced.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			p := &podObj{meta: meta{namespace: "a", name: "p"}, ips: addrs("10.0.0.1")}
			s := &sliceObj{meta: meta{namespace: "c", name: "s"}, service: "b", names: []string{"a"}}
			v.setPod(p, i%2 == 0)
			v.setSlice(s, i%2 == 0)
			v.setService(&serviceObj{meta: meta{namespace: "b", name: "a"}}, i%2 == 0)
		}
	}()
	n := clusterdns.Name{Shape: clusterdns.EndpointName, Namespace: "c", Service: "b", Endpoint: "a"}
	for {
		select {
		case <-done:
			return
		default:
			v.pod(netip.MustParseAddr("10.0.0.1"))
			v.shadowed(n)
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
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}}}
		if change != nil {
			change(p)
		}
		o, _ := toSmall(p)
		return o.(*podObj)
	}
	hostNetwork := func(p *corev1.Pod) { p.Spec.HostNetwork = true }
	succeeded := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	failed := func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }

	v := newView()
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
	if got := pod("odd", "10.0.0.300", nil).ips; len(got) != 0 {
		t.Errorf("an address that does not parse gave %v", got)
	}
	for _, s := range steps {
		v.setPod(s.pod, s.present)
		if got := v.pod(netip.MustParseAddr(s.ip)); got != s.want {
			t.Errorf("%s: pod(%s) = %q, want %q", s.what, s.ip, got, s.want)
		}
	}
	if len(v.pods) != 0 || len(v.shared) != 0 || len(v.livePods) != 0 {
		t.Errorf("left behind: pods %v, shared %v, livePods %v", v.pods, v.shared, v.livePods)
	}
}

func ptr[T any](v T) *T { return &v }

func addrs(ips ...string) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		out = append(out, netip.MustParseAddr(ip))
	}
	return out
}

func inClusterLocal(target string) bool { return strings.HasSuffix(target, ".cluster.local") }

func eventually(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The query path reads Services and endpoints only through shadowed; tests read them one by one.

// hasService reports whether Service name exists in namespace ns.
func (v *view) hasService(ns, name string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	_, ok := v.services[objectKey{ns, name}]
	return ok
}

// hasEndpoint reports whether Service service in namespace ns has an endpoint called name.
func (v *view) hasEndpoint(ns, service, name string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.endpoints[objectKey{ns, service}][name] > 0
}
