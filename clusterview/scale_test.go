package clusterview

import (
	"fmt"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	"github.com/nsguard/nsguard/internal/fixture"
)

// The cluster of the scale issue: 5,000 namespaces, 20,000 Services (one in ten headless,
// with an EndpointSlice of 3 endpoints) and 50,000 Pods.
const (
	scaleNamespaces       = 5000
	scaleServicesPerNS    = 4  // Services k = 4j .. 4j+3 live in namespace j
	scalePodsPerNS        = 10 // Pods p = 10j .. 10j+9 live in namespace j
	scaleHeadlessEvery    = 10 // Service k is headless when k%10 == 0: at most one per namespace
	scaleEndpoints        = 3  // a headless Service fronts a StatefulSet of 3 Pods
	scaleHeapBudget       = 25_000_000
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

// scaleKinds are the cluster's kinds in the order informers would sync them, with the
// setter of each: the view's own informers' for Services and EndpointSlices, the Pod store's.
func (c *scaleCluster) kinds(o *owned, ps *podStore) []scaleKind {
	return []scaleKind{
		{"services", c.eachService, func(x any) { o.setService(x.(*serviceObj), true) }},
		{"endpointslices", c.eachSlice, func(x any) { o.setSlice(x.(*sliceObj), true) }},
		{"pods", c.eachPod, func(x any) { ps.set(x.(*podObj), true) }},
	}
}

type scaleKind struct {
	name string
	each func(emit func(k8sruntime.Object))
	set  func(small any)
}

// scaleSmall is what an API object becomes on its way into the view.
func scaleSmall(ps *podStore, o any) any {
	if _, ok := o.(*corev1.Pod); ok {
		return ps.small(o)
	}
	s, _ := toSmall(o) // it never fails: it returns an error only to fit the transform's type
	return s
}

// scaleFeed runs API objects through the transforms into the setters, as the informers and
// the Pod reflector do.
func scaleFeed(o *owned, ps *podStore, objs ...k8sruntime.Object) {
	for _, obj := range objs {
		switch s := scaleSmall(ps, obj).(type) {
		case *namespaceObj:
			o.setNamespace(s, true)
		case *serviceObj:
			o.setService(s, true)
		case *sliceObj:
			o.setSlice(s, true)
		case *podObj:
			ps.set(s, true)
		default:
			panic(fmt.Sprintf("small(%T) gave %T", obj, s))
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

// TestViewHeapAtScale measures what the view's own watches cost at the size, as when
// no kubernetes plugin runs beside nsguard: Services and EndpointSlices go through toSmall
// into a store built as a shared informer builds its own and into the view's setters; Pods
// go through the Pod store's transform into the Pod store, which is the reflector's only
// store. The API objects are garbage as soon as they are transformed. With the kubernetes
// plugin beside it, the view holds no Service or EndpointSlice at all: only the Pods' part
// of this figure remains.
func TestViewHeapAtScale(t *testing.T) {
	c := newScaleCluster(scaleNamespaces)
	o, ps := newOwned(), newPodStore(false)
	var stores []cache.Indexer
	started := time.Now()

	base := scaleLiveHeap()
	prev := base
	objects := 0
	for _, k := range c.kinds(o, ps) {
		n := 0
		if k.name == "pods" {
			k.each(func(obj k8sruntime.Object) { k.set(scaleSmall(ps, obj)); n++ })
			inView := scaleLiveHeap()
			t.Logf("%-15s %6d objects: Pod store %6.2f MB (%4d B/object)", k.name, n, scaleMB(inView-prev), (inView-prev)/int64(n))
			objects += n
			prev = inView
			continue
		}
		store := cache.NewIndexer(cache.DeletionHandlingMetaNamespaceKeyFunc, cache.Indexers{}) // as ownInformers builds them
		stores = append(stores, store)
		k.each(func(obj k8sruntime.Object) {
			if err := store.Add(scaleSmall(ps, obj)); err != nil {
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
	if len(o.services) != c.services() || len(o.slices) != c.headless() || len(ps.byAddr) != c.pods() {
		t.Fatalf("view holds %d services, %d slices, %d pod addresses; want %d, %d, %d",
			len(o.services), len(o.slices), len(ps.byAddr), c.services(), c.headless(), c.pods())
	}
	if got := ps.pod(netip.MustParseAddr(scalePodIP(20))); got != "ns2/svc10-0" { // the first Pod of headless Service svc10's StatefulSet
		t.Errorf("Pod 20's address gives %q, want ns2/svc10-0", got)
	}
	if !o.hasEndpoint("ns2", "svc10", "svc10-2") {
		t.Error("endpoint svc10-2 of headless Service ns2/svc10 is missing")
	}
	runtime.KeepAlive(o)
	runtime.KeepAlive(ps)

	t.Logf("total for %d namespaces, %d Services (%d headless, with %d EndpointSlices), %d Pods: %.2f MB, %d bytes per object (%d objects); built in %v",
		c.namespaces, c.services(), c.headless(), c.headless(), c.pods(), scaleMB(total), total/int64(objects), objects, time.Since(started).Round(time.Millisecond))
	// The race detector keeps its shadow memory outside the Go heap: HeapAlloc gives the same
	// figure with and without it.
	if total >= scaleHeapBudget {
		t.Errorf("the view and the informer stores take %.2f MB for this cluster; the budget is %.0f MB", scaleMB(total), scaleMB(scaleHeapBudget))
	}
}

func scaleMB(b int64) float64 { return float64(b) / 1e6 }

// scaleViews are the views the query-path benchmark compares. All hold the incident's
// objects, so every read does the same work in each: the StatefulSet endpoint web-0.nginx.shop
// exists, the shadow primary.db hits, and 10.244.1.5 is the client Pod. "empty" holds nothing
// else; "tenth" also holds a tenth of the scale cluster (7,700 objects) and "full" the whole
// of it (77,000).
var scaleViews = sync.OnceValue(func() []scaleView {
	var views []scaleView
	for _, size := range []struct {
		name       string
		namespaces int
	}{{"empty", 0}, {"tenth", scaleNamespaces / 10}, {"full", scaleNamespaces}} {
		o, ps := newOwned(), newPodStore(false)
		scaleFeed(o, ps, fixture.Incident()...)
		c := newScaleCluster(size.namespaces)
		for _, each := range []func(func(k8sruntime.Object)){c.eachService, c.eachSlice, c.eachPod} {
			each(func(obj k8sruntime.Object) { scaleFeed(o, ps, obj) })
		}
		v := &View{services: o, pods: ps}
		v.synced.Store(true)
		views = append(views, scaleView{size.name, v})
	}
	return views
})

type scaleView struct {
	name string
	v    *View
}

// BenchmarkQueryPathAtScale compares the view's query-path reads against an empty view and
// against the views of a tenth of the scale cluster and of all of it; compare with benchstat
// -col /size. The view is a set of hash maps, so no read may grow with the cluster.
func BenchmarkQueryPathAtScale(b *testing.B) {
	zones := []string{"cluster.local."}
	pass := clusterdns.Classify("web-0.nginx.shop.svc.cluster.local.", zones)
	shadow := clusterdns.Classify("primary.db.new-namespace-1.svc.cluster.local.", zones)
	client := netip.MustParseAddr("10.244.1.5")

	for _, size := range scaleViews() {
		v := size.v
		if v.Shadowed(pass) || !v.Shadowed(shadow) || v.Pod(client) != "new-namespace-1/client" {
			b.Fatalf("view %s does not hold the incident's objects", size.name)
		}
		// An endpoint-shaped name that shadows nothing.
		b.Run("path=pass-through/size="+size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.Shadowed(pass)
			}
		})
		// The shadow check when it hits: an endpoint, then the Service it hides.
		b.Run("path=shadow-hit/size="+size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.Shadowed(shadow)
			}
		})
		// Naming the client: its address to its Pod.
		b.Run("path=client-pod/size="+size.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.Pod(client)
			}
		})
	}
}

// TestPodRelistAllocations: a relist of the full-size cluster's Pods, as the reflector hands
// them over (small, freshly decoded), writes the store in place. It happens while the
// kubernetes plugin may be relisting too, at CoreDNS's peak: a second store built aside
// would add as much again as the store holds.
func TestPodRelistAllocations(t *testing.T) {
	c := newScaleCluster(scaleNamespaces)
	ps := newPodStore(false)
	var list []any
	c.eachPod(func(o k8sruntime.Object) { list = append(list, ps.small(o)) })
	if err := ps.Replace(list, "1"); err != nil {
		t.Fatal(err)
	}
	for i, o := range list { // the same Pods again, in objects of their own
		p := *o.(*podObj)
		p.key = strings.Clone(p.key)
		list[i] = &p
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := ps.Replace(list, "2"); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("relist of %d Pods: %.2f MB allocated", len(list), scaleMB(int64(allocated)))
	if len(ps.byAddr) != c.pods() {
		t.Fatalf("store holds %d addresses after the relist, want %d", len(ps.byAddr), c.pods())
	}
	if allocated > 2_000_000 { // the sorted keys of the list: 16 B a Pod
		t.Errorf("a relist allocated %.2f MB; the budget is 2 MB", scaleMB(int64(allocated)))
	}
}
