package nsguard

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"

	"github.com/nsguard/nsguard/clusterdns"
)

// The cluster of the scale issue: 5,000 namespaces, 20,000 Services (one in ten headless,
// with an EndpointSlice of 3 endpoints) and 50,000 Pods.
const (
	scaleNamespaces       = 5000
	scaleServicesPerNS    = 4  // Services k = 4j .. 4j+3 live in namespace j
	scalePodsPerNS        = 10 // Pods p = 10j .. 10j+9 live in namespace j
	scaleHeadlessEvery    = 10 // Service k is headless when k%10 == 0: at most one per namespace
	scaleEndpoints        = 3  // a headless Service fronts a StatefulSet of 3 Pods
	scaleHeapBudget       = 40_000_000
	scaleNodes            = 500 // Pods are spread over this many nodes
	scaleResourceVersion0 = 1_000_000
)

// scaleCluster generates a synthetic cluster as the API server would send it to an informer:
// full API objects with the metadata, specs and statuses that real ones carry, so that the
// informers' transform (toSmall) has something to drop. Every string is allocated per object,
// as a decoder allocates it, so nothing the view keeps is shared between objects by accident.
// Names are short (ns4999, svc19999, Pods like svc19999-2f1c9a3e1-0b1f2): each name is kept
// three times (in the object, the store's key and the view's key), so a cluster with longer
// names costs more: 14 more characters on namespace names and 13 on Service (so Pod) names
// add 6.6 MB, to 41.6 MB.
type scaleCluster struct {
	namespaces int
	created    time.Time
}

func newScaleCluster(namespaces int) *scaleCluster {
	return &scaleCluster{namespaces: namespaces, created: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
}

func (c *scaleCluster) services() int { return c.namespaces * scaleServicesPerNS }
func (c *scaleCluster) pods() int     { return c.namespaces * scalePodsPerNS }
func (c *scaleCluster) headless() int {
	return (c.services() + scaleHeadlessEvery - 1) / scaleHeadlessEvery
}

func scaleIsHeadless(k int) bool { return k%scaleHeadlessEvery == 0 }

// scaleHeadlessIn is the headless Service of namespace j, if it has one.
func scaleHeadlessIn(j int) (int, bool) {
	for k := j * scaleServicesPerNS; k < (j+1)*scaleServicesPerNS; k++ {
		if scaleIsHeadless(k) {
			return k, true
		}
	}
	return 0, false
}

func scaleNamespace(j int) string { return "ns" + strconv.Itoa(j) }
func scaleService(k int) string   { return "svc" + strconv.Itoa(k) }

// scalePodIP is Pod p's address: 10.128.0.0/14, away from the fixtures' 10.244.0.0/16.
func scalePodIP(p int) string {
	return netip.AddrFrom4([4]byte{10, byte(128 + p>>16), byte(p >> 8), byte(p)}).String()
}

func scaleNodeIP(n int) string {
	return netip.AddrFrom4([4]byte{10, 0, byte(n >> 8), byte(n)}).String()
}

func scaleUID(kind byte, i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-%04x-4%03x-8000-%012x", uint32(i)*2654435761, kind, i&0xfff, i))
}

// objectMeta is what every object carries; rv and uid make each one distinct.
func (c *scaleCluster) objectMeta(ns, name string, kind byte, i int, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              name,
		Namespace:         ns,
		UID:               scaleUID(kind, i),
		ResourceVersion:   strconv.Itoa(scaleResourceVersion0 + int(kind)<<20 + i),
		Generation:        1,
		CreationTimestamp: metav1.NewTime(c.created.Add(time.Duration(i) * time.Second)),
		Labels:            labels,
		Annotations:       map[string]string{"owner": "team-" + strconv.Itoa(i%37) + "@example.com"},
	}
}

func (c *scaleCluster) eachService(emit func(k8sruntime.Object)) {
	for k := range c.services() {
		name := scaleService(k)
		spec := corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeClusterIP,
			Selector:              map[string]string{"app": strings.Clone(name)},
			SessionAffinity:       corev1.ServiceAffinityNone,
			IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy:        new(corev1.IPFamilyPolicySingleStack),
			InternalTrafficPolicy: new(corev1.ServiceInternalTrafficPolicyCluster),
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")},
				{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9090)},
			},
		}
		if scaleIsHeadless(k) {
			spec.ClusterIP, spec.ClusterIPs = corev1.ClusterIPNone, []string{corev1.ClusterIPNone}
			spec.PublishNotReadyAddresses = true
		} else {
			ip := netip.AddrFrom4([4]byte{10, 96, byte((k + 256) >> 8), byte(k + 256)}).String()
			spec.ClusterIP, spec.ClusterIPs = ip, []string{strings.Clone(ip)}
		}
		emit(&corev1.Service{
			ObjectMeta: c.objectMeta(scaleNamespace(k/scaleServicesPerNS), name, 's', k, map[string]string{
				"app":                          strings.Clone(name),
				"app.kubernetes.io/managed-by": "Helm",
			}),
			Spec: spec,
		})
	}
}

// eachSlice emits the EndpointSlice of every headless Service: its StatefulSet's 3 Pods,
// each with a hostname (the Pod's name, as a StatefulSet sets it) and a targetRef.
func (c *scaleCluster) eachSlice(emit func(k8sruntime.Object)) {
	for k := range c.services() {
		if !scaleIsHeadless(k) {
			continue
		}
		j, svc := k/scaleServicesPerNS, scaleService(k)
		s := &discovery.EndpointSlice{
			ObjectMeta: c.objectMeta(scaleNamespace(j), svc+"-"+fmt.Sprintf("%05x", uint32(k)*2246822519)[:5], 'e', k, map[string]string{
				discovery.LabelServiceName: strings.Clone(svc),
				discovery.LabelManagedBy:   "endpointslice-controller.k8s.io",
				"app":                      strings.Clone(svc),
			}),
			AddressType: discovery.AddressTypeIPv4,
			Ports:       []discovery.EndpointPort{{Name: new("http"), Port: new(int32(8080)), Protocol: new(corev1.ProtocolTCP)}},
		}
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: strings.Clone(svc),
			UID: scaleUID('s', k), Controller: new(true), BlockOwnerDeletion: new(true)}}
		for r := range scaleEndpoints {
			p := j*scalePodsPerNS + r
			pod := svc + "-" + strconv.Itoa(r)
			s.Endpoints = append(s.Endpoints, discovery.Endpoint{
				Addresses:  []string{scalePodIP(p)},
				Conditions: discovery.EndpointConditions{Ready: new(true), Serving: new(true), Terminating: new(false)},
				Hostname:   new(strings.Clone(pod)),
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: scaleNamespace(j), Name: pod, UID: scaleUID('p', p)},
				NodeName:   new("node-" + strconv.Itoa(p%scaleNodes)),
				Zone:       new("zone-" + strconv.Itoa(p%3)),
			})
		}
		emit(s)
	}
}

// eachPod emits 10 Pods per namespace: the 3 of its StatefulSet if it has a headless Service,
// and Deployment Pods of its other Services for the rest. Every Pod has its own address.
func (c *scaleCluster) eachPod(emit func(k8sruntime.Object)) {
	for j := range c.namespaces {
		sts, hasSTS := scaleHeadlessIn(j)
		var deploys []int
		for k := j * scaleServicesPerNS; k < (j+1)*scaleServicesPerNS; k++ {
			if !scaleIsHeadless(k) {
				deploys = append(deploys, k)
			}
		}
		for r := range scalePodsPerNS {
			p := j*scalePodsPerNS + r
			var name, app string
			var owner metav1.OwnerReference
			labels := map[string]string{}
			var hostname, subdomain string
			if hasSTS && r < scaleEndpoints {
				app = scaleService(sts)
				name = app + "-" + strconv.Itoa(r)
				owner = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: strings.Clone(app), UID: scaleUID('t', sts)}
				labels[appsv1.StatefulSetPodNameLabel] = strings.Clone(name)
				labels[appsv1.ControllerRevisionHashLabelKey] = app + "-7d9f8c6b5"
				hostname, subdomain = strings.Clone(name), strings.Clone(app)
			} else {
				k := deploys[r%len(deploys)]
				app = scaleService(k)
				hash := fmt.Sprintf("%09x", uint64(k)*2654435761)[:9]
				name = app + "-" + hash + "-" + fmt.Sprintf("%05x", uint32(p)*2246822519)[:5]
				owner = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-" + hash, UID: scaleUID('r', k)}
				labels[appsv1.DefaultDeploymentUniqueLabelKey] = strings.Clone(hash)
			}
			labels["app"] = strings.Clone(app)
			owner.Controller, owner.BlockOwnerDeletion = new(true), new(true)
			ip, node := scalePodIP(p), p%scaleNodes
			meta := c.objectMeta(scaleNamespace(j), name, 'p', p, labels)
			meta.OwnerReferences = []metav1.OwnerReference{owner}
			started := metav1.NewTime(c.created.Add(time.Duration(p) * time.Second))
			emit(&corev1.Pod{
				ObjectMeta: meta,
				Spec: corev1.PodSpec{
					Hostname:           hostname,
					Subdomain:          subdomain,
					NodeName:           "node-" + strconv.Itoa(node),
					ServiceAccountName: "default",
					RestartPolicy:      corev1.RestartPolicyAlways,
					DNSPolicy:          corev1.DNSClusterFirst,
					SchedulerName:      corev1.DefaultSchedulerName,
					Containers: []corev1.Container{{
						Name:  "app",
						Image: "registry.example.com/" + app + ":1.4." + strconv.Itoa(p%10),
						Args:  []string{"--listen=:8080", "--metrics=:9090"},
						Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
						Env: []corev1.EnvVar{
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
							{Name: "LOG_LEVEL", Value: "info"},
						},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
							Path: "/healthz", Port: intstr.FromString("http")}}, PeriodSeconds: 10},
						ImagePullPolicy:          corev1.PullIfNotPresent,
						TerminationMessagePath:   corev1.TerminationMessagePathDefault,
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					}},
					Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists,
						Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(300))}},
				},
				Status: corev1.PodStatus{
					Phase: corev1.PodRunning,
					Conditions: []corev1.PodCondition{
						{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: started},
						{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started},
						{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
						{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
					},
					HostIP:    scaleNodeIP(node),
					HostIPs:   []corev1.HostIP{{IP: scaleNodeIP(node)}},
					PodIP:     ip,
					PodIPs:    []corev1.PodIP{{IP: strings.Clone(ip)}},
					StartTime: &started,
					QOSClass:  corev1.PodQOSBurstable,
					ContainerStatuses: []corev1.ContainerStatus{{
						Name:        "app",
						Ready:       true,
						Started:     new(true),
						Image:       "registry.example.com/" + app + ":1.4." + strconv.Itoa(p%10),
						ImageID:     "registry.example.com/" + app + "@sha256:" + fmt.Sprintf("%064x", p),
						ContainerID: "containerd://" + fmt.Sprintf("%064x", uint64(p)*2654435761),
						State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
					}},
				},
			})
		}
	}
}

// scaleKinds are the cluster's kinds in the order informers would sync them, with the view's
// setter of each.
func (c *scaleCluster) kinds(v *view) []scaleKind {
	return []scaleKind{
		{"services", c.eachService, func(o any) { v.setService(o.(*serviceObj), true) }},
		{"endpointslices", c.eachSlice, func(o any) { v.setSlice(o.(*sliceObj), true) }},
		{"pods", c.eachPod, func(o any) { v.setPod(o.(*podObj), true) }},
	}
}

type scaleKind struct {
	name string
	each func(emit func(k8sruntime.Object))
	set  func(small any)
}

// scaleFeed runs API objects through the transform into v's setters, as the informers do.
func scaleFeed(v *view, objs ...k8sruntime.Object) {
	for _, o := range objs {
		s, _ := toSmall(o) // it never fails: it returns an error only to fit the transform's type
		switch s := s.(type) {
		case *corev1.Namespace: // not watched
		case *serviceObj:
			v.setService(s, true)
		case *sliceObj:
			v.setSlice(s, true)
		case *podObj:
			v.setPod(s, true)
		default:
			panic(fmt.Sprintf("toSmall(%T) gave %T", o, s))
		}
	}
}

// scaleLiveHeap is the heap in use after two full collections: what is reachable, and no garbage.
func scaleLiveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestViewHeapAtScale measures what the cluster view costs at the size, with what the
// informers' stores hold of the same objects: every object goes through toSmall into a store
// built as a shared informer builds its own (keyed by namespace/name, with the namespace
// index the informer factory always adds) and into the view's setter. The API objects are
// garbage as soon as they are transformed, as they are after an informer's transform.
func TestViewHeapAtScale(t *testing.T) {
	c := newScaleCluster(scaleNamespaces)
	v := newView()
	var stores []cache.Indexer
	started := time.Now()

	base := scaleLiveHeap()
	prev := base
	objects := 0
	for _, k := range c.kinds(v) {
		store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{}) // as the watcher builds its informers
		stores = append(stores, store)
		n := 0
		k.each(func(o k8sruntime.Object) {
			s, err := toSmall(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := store.Add(s); err != nil {
				t.Fatal(err)
			}
			n++
		})
		inStore := scaleLiveHeap()
		for _, s := range store.List() {
			k.set(s)
		}
		inView := scaleLiveHeap()
		storeB, viewB := inStore-prev, inView-inStore
		t.Logf("%-15s %6d objects: store %6.2f MB (%4d B/object), view %6.2f MB (%4d B/object), together %4d B/object",
			k.name, n, scaleMB(storeB), storeB/int64(n), scaleMB(viewB), viewB/int64(n), (storeB+viewB)/int64(n))
		objects += n
		prev = inView
	}
	total := scaleLiveHeap() - base
	runtime.KeepAlive(stores)

	// The view must be whole, or the figure means nothing.
	if len(v.services) != c.services() || len(v.slices) != c.headless() || len(v.pods) != c.pods() {
		t.Fatalf("view holds %d services, %d slices, %d pod addresses; want %d, %d, %d",
			len(v.services), len(v.slices), len(v.pods), c.services(), c.headless(), c.pods())
	}
	if got := v.pod(netip.MustParseAddr(scalePodIP(20))); got != "ns2/svc10-0" { // the first Pod of headless Service svc10's StatefulSet
		t.Errorf("Pod 20's address gives %q, want ns2/svc10-0", got)
	}
	if !v.hasEndpoint("ns2", "svc10", "svc10-2") {
		t.Error("endpoint svc10-2 of headless Service ns2/svc10 is missing")
	}
	runtime.KeepAlive(v)

	t.Logf("total for %d namespaces, %d Services (%d headless, with %d EndpointSlices), %d Pods: %.2f MB, %d bytes per object (%d objects); built in %v",
		c.namespaces, c.services(), c.headless(), c.headless(), c.pods(), scaleMB(total), total/int64(objects), objects, time.Since(started).Round(time.Millisecond))
	// The race detector keeps its shadow memory outside the Go heap, so HeapAlloc gives the same
	// figure with and without it (34.98 MB both ways when this was written); the budget is held
	// either way, since CI runs the tests with -race only.
	if raceEnabled {
		t.Log("race detector on: its shadow memory is not in HeapAlloc, so the figure stands")
	}
	if total >= scaleHeapBudget {
		t.Errorf("the view and the informer stores take %.2f MB for this cluster; the budget is %.0f MB", scaleMB(total), scaleMB(scaleHeapBudget))
	}
}

func scaleMB(b int64) float64 { return float64(b) / 1e6 }

// scaleViews are the views the query-path benchmark compares. All hold the incident's
// objects (incidentObjects), so every query does the same work in each: the StatefulSet
// endpoint web-0.nginx.shop exists, the shadow primary.db hits, and 10.244.1.5 is the client
// Pod. "empty" holds nothing else; "tenth" also holds a tenth of the scale cluster (7,700
// objects) and "full" the whole of it (77,000).
var scaleViews = sync.OnceValue(func() []scaleView {
	var views []scaleView
	for _, size := range []struct {
		name       string
		namespaces int
	}{{"empty", 0}, {"tenth", scaleNamespaces / 10}, {"full", scaleNamespaces}} {
		v := newView()
		scaleFeed(v, incidentObjects()...)
		c := newScaleCluster(size.namespaces)
		for _, each := range []func(func(k8sruntime.Object)){c.eachService, c.eachSlice, c.eachPod} {
			each(func(o k8sruntime.Object) { scaleFeed(v, o) })
		}
		v.synced.Store(true)
		views = append(views, scaleView{size.name, v})
	}
	return views
})

type scaleView struct {
	name string
	v    *view
}

// BenchmarkQueryPathAtScale compares the query path's cost against an empty view and against
// the views of a tenth of the scale cluster and of all of it; compare with benchstat -col /size.
// The view is a set of hash maps, so no path may grow with the cluster. (A Go map of up to 8
// entries is a single group with no directory to walk, so the step from "empty" to "tenth" is
// the maps leaving that small form; "tenth" to "full" is growth with size.)
func BenchmarkQueryPathAtScale(b *testing.B) {
	ctx := context.Background()
	zones := []string{"cluster.local."}
	w := newWriter() // 10.244.1.5: Pod new-namespace-1/client in both views

	pass := query("web-0.nginx.shop.svc.cluster.local.", dns.TypeA, noEDNS)
	next := writeOnce{reply(pass, dns.RcodeSuccess)}
	shadow := clusterdns.Classify("primary.db.new-namespace-1.svc.cluster.local.", zones)

	for _, size := range scaleViews() {
		g := New(testConfig(zones, ModeRefuse, dns.RcodeNameError))
		g.view, g.Next = size.v, next
		if size.v.shadowed(clusterdns.Classify(pass.Question[0].Name, zones)) || !size.v.shadowed(shadow) || g.clientPod(remoteIP(w)) != "new-namespace-1/client" {
			b.Fatalf("view %s does not hold the incident's objects", size.name)
		}

		// An endpoint-shaped name that shadows nothing: both view lookups, then the next plugin.
		b.Run("path=pass-through/size="+size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g.ServeDNS(ctx, w, pass)
			}
		})
		// The shadow check when it hits: an endpoint, then the Service it hides.
		b.Run("path=shadow-hit/size="+size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				size.v.shadowed(shadow)
			}
		})
		// Naming the client: its address, parsed off the writer, to its Pod.
		b.Run("path=client-pod/size="+size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g.clientPod(remoteIP(w))
			}
		})
	}
}
