//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/scale"
)

// A tenth of the scale issue's cluster, laid out as the root package's scale test lays out the
// whole: namespace j holds Services 4j..4j+3 and 10 Pods; Service k is headless when k%10 == 0,
// with an EndpointSlice naming the 3 Pods of its StatefulSet.
const (
	scaleNamespaces      = 500
	scaleServicesPerNS   = 4
	scalePodsPerNS       = 10
	scaleHeadlessEvery   = 10
	scaleEndpoints       = 3
	scaleWorkers         = 16
	scaleSyncBudget      = 60 * time.Second
	scaleShadowNamespace = "svc0"   // named like headless Service svc0 in scale-0 ...
	scaleShadowService   = "svc0-0" // ... and holding a Service named like its first endpoint
)

func scaleNS(j int) string        { return "scale-" + strconv.Itoa(j) }
func scaleSvc(k int) string       { return "svc" + strconv.Itoa(k) }
func scaleHeadless(k int) bool    { return k%scaleHeadlessEvery == 0 }
func scalePodIP(p int) string     { return fmt.Sprintf("10.245.%d.%d", p/250, p%250+1) }
func scaleStsPod(k, r int) string { return scaleSvc(k) + "-" + strconv.Itoa(r) }

// TestViewSyncAtScale times how long nsguard's view takes to sync from the real API server,
// from the start of the CoreDNS process to coredns_nsguard_view_synced 1: once with the
// suite's few objects, once with a tenth of the scale cluster added (500 namespaces, 2,000
// Services of which 200 headless with their EndpointSlices, 5,000 Pods with addresses).
func TestViewSyncAtScale(t *testing.T) {
	began := time.Now()
	t.Cleanup(func() { t.Logf("whole test: %v", time.Since(began).Round(100*time.Millisecond)) })

	rc := env.cp.RESTConfig()
	rc.QPS, rc.Burst = 500, 1000
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}

	var small, tenth time.Duration
	t.Run("size=incident", func(t *testing.T) { small, _ = scaleTimeSync(t, "127.53.1.31") })

	t.Cleanup(func() { scaleDelete(t, cs) })
	if err := scaleCreate(t, cs); err != nil {
		t.Fatal(err)
	}
	scaleListTimes(t, cs)

	t.Run("size=tenth", func(t *testing.T) {
		var p *pod
		tenth, p = scaleTimeSync(t, "127.53.1.30")
		// The view really holds the scale cluster: endpoint svc0-0 of headless Service svc0 in
		// scale-0 shadows Service svc0-0 of namespace svc0.
		shadow := scaleShadowService + ".svc0." + scaleNS(0) + ".svc.cluster.local."
		if res := p.ask(t, shadow, dns.TypeA); res.Rcode != dns.RcodeSuccess || len(res.Answer) == 0 {
			t.Fatalf("%s: %v, want the endpoint's address", shadow, res)
		}
		// The line is written after the answer.
		if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return strings.Contains(p.dns.Log(), `endpoint shadows a Service "svc0-0.svc0"`), nil
		}); err != nil {
			t.Fatalf("nsguard did not log the shadow at scale:\n%s", p.dns.Log())
		}
		scaleMemory(t, p)
	})
	t.Logf("view sync from process start: %v with the suite's objects, %v with a tenth of the scale cluster (budget %v)",
		small.Round(time.Millisecond), tenth.Round(time.Millisecond), scaleSyncBudget)
	if tenth > scaleSyncBudget {
		t.Errorf("the view took %v to sync a tenth of the scale cluster; the budget is %v", tenth, scaleSyncBudget)
	}
}

// scaleMemory compares the memory of CoreDNS with nsguard's view (withView) against a CoreDNS
// with the kubernetes plugin alone, both synced with the same cluster and asked the same
// questions. The view keeps names and addresses only, so it must hold less than the
// kubernetes plugin's own cache of the same objects.
func scaleMemory(t *testing.T, withView *pod) {
	alone := startDNS(t, "127.53.1.32", coredns.Config{})
	for k := range 200 {
		name := scaleSvc(k) + "." + scaleNS(k/scaleServicesPerNS) + ".svc.cluster.local."
		alone.waitRcode(t, name, dns.TypeA, dns.RcodeSuccess)
		withView.waitRcode(t, name, dns.TypeA, dns.RcodeSuccess)
	}
	time.Sleep(5 * time.Second) // past a GC cycle in both
	mib := func(p *pod, name string) float64 { return metric(t, p, name) / (1 << 20) }
	rssView, rssAlone := mib(withView, "process_resident_memory_bytes"), mib(alone, "process_resident_memory_bytes")
	heapView, heapAlone := mib(withView, "go_memstats_heap_inuse_bytes"), mib(alone, "go_memstats_heap_inuse_bytes")
	t.Logf("resident memory at a tenth of the scale cluster: %.1f MiB with nsguard's view, %.1f MiB with the kubernetes plugin alone (+%.1f MiB); heap in use %.1f MiB and %.1f MiB",
		rssView, rssAlone, rssView-rssAlone, heapView, heapAlone)
	if heapView-heapAlone > heapAlone {
		t.Errorf("nsguard's view adds %.1f MiB of heap, more than the kubernetes plugin's whole %.1f MiB", heapView-heapAlone, heapAlone)
	}
}

// scaleTimeSync starts CoreDNS with nsguard watching the cluster on ip and returns the time
// from just before the process started to nsguard's view reporting synced on /metrics.
func scaleTimeSync(t *testing.T, ip string) (time.Duration, *pod) {
	start := time.Now()
	p := startDNS(t, ip, coredns.Config{NSGuard: "nsguard {\n        kubeconfig " + env.cp.Kubeconfig + "\n    }"})
	answering := time.Since(start)
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Until(start.Add(scaleSyncBudget+30*time.Second)), true, func(context.Context) (bool, error) {
		body, err := p.dns.Scrape()
		return err == nil && coredns.ViewSynced(body), nil
	}); err != nil {
		t.Fatalf("nsguard's view not synced %v after CoreDNS started", time.Since(start).Round(time.Second))
	}
	synced := time.Since(start)
	waited := strings.Contains(p.dns.Log(), "cluster view not synced after")
	t.Logf("CoreDNS answering after %v, nsguard's view synced after %v (start-up gave up waiting for it: %v)",
		answering.Round(time.Millisecond), synced.Round(time.Millisecond), waited)
	return synced, p
}

// scaleCreate creates the tenth of the scale cluster with scaleWorkers workers, and the shadow.
func scaleCreate(t *testing.T, cs kubernetes.Interface) error {
	ctx := t.Context()
	create := metav1.CreateOptions{}
	services := scaleNamespaces * scaleServicesPerNS
	pods := scaleNamespaces * scalePodsPerNS
	steps := []struct {
		what string
		n    int
		do   func(i int) error
	}{
		{"namespaces", scaleNamespaces + 1, func(j int) error {
			name := scaleShadowNamespace
			if j < scaleNamespaces {
				name = scaleNS(j)
			}
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{"nsguard-e2e": "scale"}}}, create)
			return err
		}},
		{"services", services + 1, func(k int) error {
			if k == services {
				_, err := cs.CoreV1().Services(scaleShadowNamespace).Create(ctx, &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: scaleShadowService, Namespace: scaleShadowNamespace},
					Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
				}, create)
				return err
			}
			ns, name := scaleNS(k/scaleServicesPerNS), scaleSvc(k)
			svc := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
				Spec: corev1.ServiceSpec{
					Selector: map[string]string{"app": name},
					Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
				},
			}
			if scaleHeadless(k) {
				svc.Spec.ClusterIP = corev1.ClusterIPNone
			}
			_, err := cs.CoreV1().Services(ns).Create(ctx, svc, create)
			return err
		}},
		{"endpointslices", services / scaleHeadlessEvery, func(i int) error {
			k := i * scaleHeadlessEvery
			j := k / scaleServicesPerNS
			ns, name := scaleNS(j), scaleSvc(k)
			slice := &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-scale", Namespace: ns, Labels: map[string]string{
					discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: cluster.ManagedBy}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(8080)), Protocol: new(corev1.ProtocolTCP)}},
			}
			for r := range scaleEndpoints {
				slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
					Addresses:  []string{scalePodIP(j*scalePodsPerNS + r)},
					Hostname:   new(scaleStsPod(k, r)),
					Conditions: discoveryv1.EndpointConditions{Ready: new(true)},
					TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: scaleStsPod(k, r)},
				})
			}
			_, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, create)
			return err
		}},
		{"pods (create, then status)", pods, func(p int) error {
			j, r := p/scalePodsPerNS, p%scalePodsPerNS
			ns := scaleNS(j)
			k := j*scaleServicesPerNS + r%scaleServicesPerNS // a Deployment Pod of one of its Services
			name := fmt.Sprintf("%s-7d9f8c6b5-%05d", scaleSvc(k), p)
			spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: cluster.ClientImage,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}
			for kk := j * scaleServicesPerNS; kk < (j+1)*scaleServicesPerNS; kk++ {
				if scaleHeadless(kk) && r < scaleEndpoints { // the StatefulSet of the namespace's headless Service
					k, name = kk, scaleStsPod(kk, r)
					spec.Hostname, spec.Subdomain = name, scaleSvc(kk)
				}
			}
			pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": scaleSvc(k)}},
				Spec:       spec,
			}, create)
			if err != nil {
				return err
			}
			ip := scalePodIP(p)
			pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
			_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			return err
		}},
	}
	began := time.Now()
	for _, s := range steps {
		start := time.Now()
		if err := scaleEach(ctx, s.n, s.do); err != nil {
			return fmt.Errorf("creating %s: %w", s.what, err)
		}
		t.Logf("created %5d %s in %v", s.n, s.what, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("created the tenth of the scale cluster in %v", time.Since(began).Round(time.Millisecond))
	return nil
}

// scaleListTimes logs how long one LIST of each kind over the cluster takes this client: the
// floor under any informer's sync.
func scaleListTimes(t *testing.T, cs kubernetes.Interface) {
	ctx, all := t.Context(), metav1.ListOptions{}
	var parts []string
	for _, l := range []struct {
		what string
		list func() (int, error)
	}{
		{"namespaces", func() (int, error) { l, err := cs.CoreV1().Namespaces().List(ctx, all); return len(l.Items), err }},
		{"services", func() (int, error) { l, err := cs.CoreV1().Services("").List(ctx, all); return len(l.Items), err }},
		{"endpointslices", func() (int, error) {
			l, err := cs.DiscoveryV1().EndpointSlices("").List(ctx, all)
			return len(l.Items), err
		}},
		{"pods", func() (int, error) { l, err := cs.CoreV1().Pods("").List(ctx, all); return len(l.Items), err }},
	} {
		start := time.Now()
		n, err := l.list()
		if err != nil {
			t.Fatalf("list %s: %v", l.what, err)
		}
		parts = append(parts, fmt.Sprintf("%d %s in %v", n, l.what, time.Since(start).Round(time.Millisecond)))
	}
	t.Logf("one LIST each: %s", strings.Join(parts, ", "))
}

// scaleDelete removes everything scaleCreate made, whatever part of it exists, so that the
// later tests see the suite's cluster as it was.
func scaleDelete(t *testing.T, cs kubernetes.Interface) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := scaleEach(ctx, scaleNamespaces+1, func(j int) error {
		ns := scaleShadowNamespace
		if j < scaleNamespaces {
			ns = scaleNS(j)
		}
		return scale.DeleteNamespace(ctx, cs, ns)
	})
	if err != nil {
		t.Errorf("clean-up: %v", err)
	}
	t.Logf("deleted the scale cluster in %v", time.Since(start).Round(time.Millisecond))
}

// scaleEach runs do(0) .. do(n-1) on scaleWorkers workers and returns the first error.
func scaleEach(ctx context.Context, n int, do func(i int) error) error {
	return scale.Each(ctx, n, scaleWorkers, func(_ context.Context, i int) error { return do(i) })
}
