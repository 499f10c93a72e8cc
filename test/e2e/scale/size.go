// Package scale loads a real API server with a cluster of realistic objects and measures the
// memory of CoreDNS configurations against it: peak resident memory (VmHWM) through the first
// sync and through the relist that follows an API server restart, the Go heap after sync, and
// the watches each user agent opens, counted from the API server's audit log.
//
// test/e2e/benchscale (make bench-scale) runs it at the full size; the e2e suite can run it at
// a tenth and compare the configurations:
//
//	cp, audit, err := scale.StartControlPlane(ctx, binDir, dir) // etcd quota, audit log
//	cs, err := scale.Client(cp)
//	timings, err := scale.Create(ctx, cs, scale.Tenth, scale.DefaultWorkers, t.Logf)
//	env := scale.Env{CP: cp, Client: cs, CoreDNS: bin, Dir: dir, IP: "127.53.40.1", AuditLog: audit, Logf: t.Logf}
//	alone, err := scale.Measure(ctx, env, scale.KubernetesAlone)
//	guard, err := scale.Measure(ctx, env, scale.NSGuard)
//	if guard.Peak() > alone.Peak()*125/100 { t.Errorf(...) }
package scale

import (
	"fmt"
	"net/netip"
)

// Size is the shape of the cluster: Namespaces namespaces, each holding ServicesPerNamespace
// Services (each with one EndpointSlice naming its Pods) and PodsPerNamespace Pods, spread over
// the namespace's Services in turn. Every HeadlessEvery-th Service is headless; its Pods are a
// StatefulSet's, and its EndpointSlice gives them hostnames.
type Size struct {
	Namespaces           int
	ServicesPerNamespace int
	PodsPerNamespace     int
	HeadlessEvery        int
}

// Full is the size the project names as its scale: 5,000 namespaces, 20,000 Services,
// 50,000 Pods.
var Full = Size{Namespaces: 5000, ServicesPerNamespace: 4, PodsPerNamespace: 10, HeadlessEvery: 10}

// Tenth is a tenth of Full, for the e2e suite: 500 namespaces, 2,000 Services, 5,000 Pods.
var Tenth = Size{Namespaces: 500, ServicesPerNamespace: 4, PodsPerNamespace: 10, HeadlessEvery: 10}

// Services is the number of Services (and of EndpointSlices).
func (s Size) Services() int { return s.Namespaces * s.ServicesPerNamespace }

// Pods is the number of Pods.
func (s Size) Pods() int { return s.Namespaces * s.PodsPerNamespace }

func (s Size) String() string {
	return fmt.Sprintf("%d namespaces, %d Services with one EndpointSlice each (every %dth headless), %d Pods",
		s.Namespaces, s.Services(), s.HeadlessEvery, s.Pods())
}

func (s Size) validate() error {
	if s.Namespaces <= 0 || s.ServicesPerNamespace <= 0 || s.PodsPerNamespace < 0 || s.HeadlessEvery <= 0 {
		return fmt.Errorf("size %+v: every count must be positive", s)
	}
	if s.Pods() > 1<<22 {
		return fmt.Errorf("size %+v: more Pods than the Pod network 10.128.0.0/9 holds", s)
	}
	return nil
}

// Names and addresses. Namespace j holds Services k = j*ServicesPerNamespace ...; Pod p is
// Pod r = p%PodsPerNamespace of namespace p/PodsPerNamespace and belongs to that namespace's
// Service r%ServicesPerNamespace.

// NamespacePrefix starts the name of every namespace Create makes.
const NamespacePrefix = "scale-ns-"

// Namespace is the name of namespace j.
func Namespace(j int) string { return fmt.Sprintf("%s%d", NamespacePrefix, j) }

// ServiceName is the name of Service k.
func ServiceName(k int) string { return fmt.Sprintf("app-%d", k) }

// Headless reports whether Service k is headless.
func (s Size) Headless(k int) bool { return k%s.HeadlessEvery == 0 }

// ServiceOf is the Service Pod p belongs to.
func (s Size) ServiceOf(p int) int {
	j, r := p/s.PodsPerNamespace, p%s.PodsPerNamespace
	return j*s.ServicesPerNamespace + r%s.ServicesPerNamespace
}

// PodsOf are the Pods of Service k, in ordinal order.
func (s Size) PodsOf(k int) []int {
	j, i := k/s.ServicesPerNamespace, k%s.ServicesPerNamespace
	var out []int
	for r := i; r < s.PodsPerNamespace; r += s.ServicesPerNamespace {
		out = append(out, j*s.PodsPerNamespace+r)
	}
	return out
}

// ordinal is Pod p's place among its Service's Pods.
func (s Size) ordinal(p int) int { return p % s.PodsPerNamespace / s.ServicesPerNamespace }

// PodName is the name of Pod p: a Deployment's Pod, or a StatefulSet's for a headless Service.
func (s Size) PodName(p int) string {
	k := s.ServiceOf(p)
	if s.Headless(k) {
		return fmt.Sprintf("%s-%d", ServiceName(k), s.ordinal(p))
	}
	return fmt.Sprintf("%s-%s-%s", ServiceName(k), hash(k, 10), hash(p, 5))
}

// podNet is the Pod network; Pod p has address podNet + p + 1, unique in the cluster.
var podNet = netip.MustParseAddr("10.128.0.0")

// PodIP is the address of Pod p.
func PodIP(p int) string { return addrAdd(podNet, uint32(p)+1).String() }

func addrAdd(a netip.Addr, n uint32) netip.Addr {
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += n
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// nodes is how many nodes the Pods are spread over, about 30 a node as in a busy cluster.
func (s Size) nodes() int { return max(1, s.Pods()/30) }

func nodeName(n int) string {
	return fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", n/250, n%250+1)
}

func nodeIP(n int) string { return fmt.Sprintf("10.0.%d.%d", n/250, n%250+1) }

// hash is a stable lower-case alphanumeric string of n characters made from i, the shape of
// a ReplicaSet's pod-template-hash or a generated name's suffix.
func hash(i, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	x := uint64(i)*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	b := make([]byte, n)
	for k := range b {
		x ^= x >> 29
		x *= 0xbf58476d1ce4e5b9
		b[k] = alphabet[x%uint64(len(alphabet))]
	}
	return string(b)
}

// hex64 is a stable 64-digit hex string from i and salt: an image digest or a container ID.
func hex64(i int, salt string) string {
	const digits = "0123456789abcdef"
	x := uint64(i)*0x9e3779b97f4a7c15 ^ uint64(len(salt))*0xd6e8feb86659fd93
	for _, c := range salt {
		x = x*31 + uint64(c)
	}
	b := make([]byte, 64)
	for k := range b {
		x ^= x >> 31
		x *= 0x94d049bb133111eb
		b[k] = digits[(x>>7)&15]
	}
	return string(b)
}

// uid is a stable UID-shaped string, for owner references the absent controllers would hold.
func uid(i int, salt string) string {
	h := hex64(i, salt)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}
