//go:build e2e

package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

const droppedMetric = "coredns_nsguard_events_dropped_total"

// dropReasons are the values of events_dropped_total's reason label.
var dropReasons = []string{"queue_full", "stopped", "pod_gone", "unreachable", "timeout", "forbidden", "rejected", "server_error"}

// drops reads events_dropped_total by reason.
func drops(t *testing.T, p *pod) map[string]float64 {
	t.Helper()
	return coredns.SumBy(scrape(t, p.dns), droppedMetric, "reason")
}

// deleteEventsSince deletes nsguard's Events in ns made since since, so that later tests of
// the same Pod see only their own.
func deleteEventsSince(t *testing.T, ns string, since time.Time) {
	t.Cleanup(func() {
		for _, e := range nsguardEvents(t, ns, since) {
			env.cp.Clientset().EventsV1().Events(ns).Delete(context.Background(), e.Name, metav1.DeleteOptions{})
		}
	})
}

// nsguardEvents lists nsguard's Events in namespace ns made since since.
func nsguardEvents(t *testing.T, ns string, since time.Time) []eventsv1.Event {
	t.Helper()
	list, err := env.cp.Clientset().EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.ReportingController == "nsguard" && !e.EventTime.Time.Before(since) {
			out = append(out, e)
		}
	}
	return out
}

// The endpoint-shadow Event of the longest names: Service a×63 in namespace b×60, and in the
// client's namespace a headless Service b×60 with an endpoint a×63. Its action would be 132
// characters, past the API server's 128: it is shortened, and the real API server takes it.
func TestEventsLongShadow(t *testing.T) {
	ctx, cs := t.Context(), env.cp.Clientset()
	a, b := strings.Repeat("a", 63), strings.Repeat("b", 60)
	ports := []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.CoreV1().Services(cluster.ClientNamespace).Delete(context.Background(), b, metav1.DeleteOptions{})
		cs.DiscoveryV1().EndpointSlices(cluster.ClientNamespace).Delete(context.Background(), b+"-e2e", metav1.DeleteOptions{})
		if err := cluster.FinalizeNamespaceDeletion(context.Background(), cs, b); err != nil {
			t.Errorf("clean-up: %v", err)
		}
	})
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: a, Namespace: b}, Spec: corev1.ServiceSpec{Ports: ports}},
		{ObjectMeta: metav1.ObjectMeta{Name: b, Namespace: cluster.ClientNamespace}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: ports}},
	} {
		if _, err := cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: b + "-e2e", Namespace: cluster.ClientNamespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: b, discoveryv1.LabelManagedBy: cluster.ManagedBy}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.63"}, Hostname: new(a),
			Conditions: discoveryv1.EndpointConditions{Ready: new(true)}}},
		Ports: []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(80)), Protocol: new(corev1.ProtocolTCP)}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(cluster.ClientNamespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	p := startDNS(t, "127.53.1.63", coredns.Config{NSGuard: withView("events 1h")})
	p.waitSynced(t)
	started := time.Now()
	deleteEventsSince(t, cluster.ClientNamespace, started)
	qname := a + "." + b + "." + cluster.ClientNamespace + ".svc.cluster.local."
	p.waitRcode(t, qname, dns.TypeA, dns.RcodeSuccess)
	var ev *eventsv1.Event
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		for _, e := range nsguardEvents(t, cluster.ClientNamespace, started) {
			if e.Reason == "DNSEndpointShadow" && strings.HasPrefix(e.Action, "Resolve "+a) {
				ev = &e
			}
		}
		if d := drops(t, p); ev == nil && len(d) > 0 {
			t.Fatalf("the Event was dropped: %v\n%s", d, p.dns.Log())
		}
		p.ask(t, qname, dns.TypeA) // the shadow is seen once the view has the Services
		return ev != nil, nil
	}); err != nil {
		t.Fatalf("no shadow Event, and none counted dropped:\n%s", p.dns.Log())
	}
	if len(ev.Action) > 128 || ev.Regarding.Name != cluster.ClientPod || len(ev.Note) > 1024 ||
		!strings.Contains(ev.Note, `what the search list makes of "`+a+"."+b+`"`) {
		t.Errorf("Event %+v", ev)
	}
	t.Logf("recorded, action of %d characters: %s", len(ev.Action), ev.Action)
}

// A flood of 2,000 apex answers, 20 Pods × 100 namespaces, keeps goroutines and memory flat:
// Events reach the API server at the stated rate, what waits is bounded and the rest is
// counted as queue_full; a reload that changes the Events' interval starts a new worker and
// counts what still waits for the old one as stopped (one that changes nothing hands the
// worker over, TestReloadKeepsEventsWorker). Every answer is then an Event or a count.
func TestEventsFlood(t *testing.T) {
	const (
		pods       = 20
		namespaces = 100
		clientNS   = "nsguard-flood"
		window     = 5 * time.Second
	)
	ctx, cs := t.Context(), env.cp.Clientset()
	apexNS := func(j int) string { return "nsguard-flood-" + strconv.Itoa(j) }
	podIP := func(i int) string { return "127.0.9." + strconv.Itoa(i+1) }
	var wg sync.WaitGroup
	errs := make(chan error, namespaces+pods)
	for j := range namespaces {
		wg.Go(func() {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: apexNS(j)}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				errs <- err
			}
		})
	}
	for i := range pods {
		wg.Go(func() {
			if err := cluster.CreateRunningPod(ctx, cs, clientNS, "client-"+strconv.Itoa(i), podIP(i)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for j := range namespaces {
			wg.Go(func() { deleteEmptyNamespace(ctx, cs, apexNS(j)) })
		}
		wg.Wait()
		if err := cluster.FinalizeNamespaceDeletion(ctx, cs, clientNS); err != nil {
			t.Errorf("clean-up: %v", err)
		}
	})

	p := startDNS(t, "127.53.1.64", coredns.Config{NSGuard: withView("events 1h")})
	p.waitSynced(t)
	p.waitRcode(t, apexNS(namespaces-1)+".svc.cluster.local.", dns.TypeA, dns.RcodeSuccess)
	time.Sleep(2 * time.Second)
	goroutines0, rss0 := goroutines(t, p), metric(t, p, "process_resident_memory_bytes")
	heap0 := metric(t, p, "go_memstats_heap_inuse_bytes")
	since := time.Now()

	for i := range pods {
		wg.Go(func() {
			c := &dns.Client{Timeout: 5 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(podIP(i))}}}
			for j := range namespaces {
				m := new(dns.Msg)
				m.SetQuestion(apexNS(j)+".svc.cluster.local.", dns.TypeA)
				c.Exchange(m, p.dns.IP+":53")
			}
		})
	}
	wg.Wait()
	flooded := time.Since(since)
	goroutines1, rss1 := goroutines(t, p), metric(t, p, "process_resident_memory_bytes")
	answers := metric(t, p, apexMetric, "client_namespace="+clientNS)
	burst := len(nsguardEvents(t, clientNS, since))
	time.Sleep(window)
	goroutines2, rss2 := goroutines(t, p), metric(t, p, "process_resident_memory_bytes")
	heap2 := metric(t, p, "go_memstats_heap_inuse_bytes")
	written := len(nsguardEvents(t, clientNS, since))
	rate := float64(written-burst) / window.Seconds()
	before := drops(t, p)

	// A reload with Events still waiting.
	done := strings.Count(p.dns.Log(), "Reloading complete")
	changed := coredns.Config{IP: p.dns.IP, Kubeconfig: env.cp.Kubeconfig, ZoneDir: env.zoneDir, Metrics: p.dns.Metrics, NSGuard: withView("events 2h")}
	if err := p.dns.Reload(changed.Corefile()); err != nil {
		t.Fatal(err)
	}
	if err := p.dns.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return strings.Count(p.dns.Log(), "Reloading complete") != done, nil
	}); err != nil {
		t.Fatalf("the reload did not complete:\n%s", p.dns.Log())
	}
	time.Sleep(time.Second)
	after := drops(t, p)
	events := len(nsguardEvents(t, clientNS, since))
	accounted := float64(events)
	for _, r := range dropReasons {
		accounted += after[r]
	}

	t.Logf("%v apex answers in %v; goroutines %d before, %d after the flood, %d %v later; resident %.1f MiB, %.1f MiB, %.1f MiB",
		answers, flooded.Round(time.Millisecond), goroutines0, goroutines1, goroutines2, window, rss0/(1<<20), rss1/(1<<20), rss2/(1<<20))
	t.Logf("heap in use %.1f MiB before, %.1f MiB %v after", heap0/(1<<20), heap2/(1<<20), window)
	t.Logf("Events: %d just after the flood, %.1f a second over the next %v, %d in all; dropped %v before the reload, %v after",
		burst, rate, window, events, before, after)
	if answers != pods*namespaces {
		t.Errorf("%v apex answers from the flood's Pods, want %d", answers, pods*namespaces)
	}
	if g := max(goroutines1, goroutines2); g > goroutines0+50 {
		t.Errorf("goroutines grew from %d to %d", goroutines0, g)
	}
	if grew := (max(rss1, rss2) - rss0) / (1 << 20); grew > 10 {
		t.Errorf("resident memory grew by %.1f MiB", grew)
	}
	if rate > 3 || written-burst == 0 {
		t.Errorf("%.1f Events a second after the burst, want about 2", rate)
	}
	if before["queue_full"] == 0 || after["stopped"] == 0 {
		t.Errorf("queue_full %v, stopped %v: want both counted", before["queue_full"], after["stopped"])
	}
	// A write cut off by the reload may have reached the API server and still be counted.
	if accounted < answers || accounted > answers+1 {
		t.Errorf("%v Events and drops for %v answers", accounted, answers)
	}
}

// deleteEmptyNamespace deletes namespace name, finalizing it as the absent namespace
// controller would; it holds nothing to delete first.
func deleteEmptyNamespace(ctx context.Context, cs kubernetes.Interface, name string) {
	nsc := cs.CoreV1().Namespaces()
	if err := nsc.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return
	}
	for range 5 {
		n, err := nsc.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		n.Spec.Finalizers = nil
		nsc.Finalize(ctx, n, metav1.UpdateOptions{})
	}
}

// With the Events role taken away, Events are counted as forbidden and the log says so as
// plugin/nsguard.
func TestEventsForbidden(t *testing.T) {
	kubeconfig, unbind := eventsServiceAccount(t)
	p := startDNS(t, "127.53.1.65", coredns.Config{NSGuard: "nsguard {\n        kubeconfig " + kubeconfig + "\n        events 1h\n    }"})
	p.waitSynced(t)
	started := time.Now()
	deleteEventsSince(t, cluster.ClientNamespace, started)

	// With the role, the Event is recorded. Names other tests' Events do not use.
	p.ask(t, cluster.EmptyNamespace+".svc.cluster.local.", dns.TypeA)
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(nsguardEvents(t, cluster.ClientNamespace, started)) > 0, nil
	}); err != nil {
		t.Fatalf("no Event with the Events role: %v\n%s", drops(t, p), p.dns.Log())
	}

	unbind()
	p.ask(t, cluster.OtherAppNamespace+".svc.cluster.local.", dns.TypeA) // another name: an Event of its own
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return metric(t, p, droppedMetric, "reason=forbidden") != 0, nil
	}); err != nil {
		t.Fatalf("no Event counted forbidden: %v\n%s", drops(t, p), p.dns.Log())
	}
	if !strings.Contains(p.dns.Log(), "[WARNING] plugin/nsguard: Event not recorded (forbidden") {
		t.Errorf("the log does not tell of the forbidden Event:\n%s", p.dns.Log())
	}
	t.Logf("dropped: %v", drops(t, p))
}

// eventsServiceAccount makes a ServiceAccount of its own with CoreDNS's roles and the shipped
// Events role, and returns a kubeconfig for it and a function that takes the Events role away.
func eventsServiceAccount(t *testing.T) (string, func()) {
	t.Helper()
	ctx, cs := t.Context(), env.cp.Clientset()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.CoreDNSToken(ctx, cs, root); err != nil { // CoreDNS's roles, as shipped
		t.Fatal(err)
	}
	eventsRole := "system:coredns-nsguard-events"
	b, err := os.ReadFile(filepath.Join(root, "deploy/kubernetes-events/rbac-nsguard-events.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := cluster.DecodeManifests(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if role, ok := o.(*rbacv1.ClusterRole); ok {
			if role.Name != eventsRole {
				t.Fatalf("the shipped Events role is %s", role.Name)
			}
			if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
	const sa = "nsguard-events-e2e"
	ns := cluster.CoreDNSNamespace
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	bind := func(role string) string {
		name := sa + ":" + strings.TrimPrefix(role, "system:")
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		return name
	}
	bind("system:coredns")
	bind("system:coredns-nsguard")
	events := bind(eventsRole)
	t.Cleanup(func() { cs.CoreV1().ServiceAccounts(ns).Delete(context.Background(), sa, metav1.DeleteOptions{}) })
	waitCan(t, sa, true)

	token, err := env.cp.Clientset().CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: env.cp.RESTConfig().Host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: sa}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path, func() {
		if err := cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), events, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCan(t, sa, false)
	}
}

// waitCan waits until the ServiceAccount's permission to create Events in the client's
// namespace is can.
func waitCan(t *testing.T, sa string, can bool) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + cluster.CoreDNSNamespace + ":" + sa,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: "events.k8s.io", Resource: "events", Verb: "create", Namespace: cluster.ClientNamespace},
	}}
	var res *authorizationv1.SubjectAccessReview
	var err error
	if werr := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		res, err = env.cp.Clientset().AuthorizationV1().SubjectAccessReviews().Create(t.Context(), review, metav1.CreateOptions{})
		return err == nil && res.Status.Allowed == can, nil
	}); werr != nil {
		t.Fatalf("%s may create Events: %v, want %v (%v)", sa, res, can, err)
	}
}
