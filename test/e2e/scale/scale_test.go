package scale

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nsguard/nsguard/test/e2e/corefiles"
)

// The layout: every Pod is its Service's, once, with an address and a name of its own.
func TestLayout(t *testing.T) {
	s := Size{Namespaces: 30, ServicesPerNamespace: 4, PodsPerNamespace: 10, HeadlessEvery: 10}
	ips, names, owned := map[string]bool{}, map[string]bool{}, map[int]int{}
	for k := range s.Services() {
		for _, p := range s.PodsOf(k) {
			if s.ServiceOf(p) != k {
				t.Fatalf("Pod %d is in PodsOf(%d) but ServiceOf says %d", p, k, s.ServiceOf(p))
			}
			owned[p]++
		}
	}
	for p := range s.Pods() {
		if owned[p] != 1 {
			t.Fatalf("Pod %d belongs to %d Services", p, owned[p])
		}
		ip, name := PodIP(p), s.PodObject(p).Namespace+"/"+s.PodName(p)
		if ips[ip] || names[name] {
			t.Fatalf("Pod %d: %s or %s taken", p, ip, name)
		}
		ips[ip], names[name] = true, true
		if st := s.PodStatus(p); st.PodIP != ip || len(st.ContainerStatuses) != len(s.PodObject(p).Spec.Containers) {
			t.Fatalf("Pod %d: status %+v", p, st)
		}
	}
	if got := PodIP(s.Pods() - 1); got != "10.128.1.44" {
		t.Errorf("last Pod's address %s", got)
	}
	slice := s.EndpointSliceObject(0, "uid")
	if len(slice.Endpoints) != 3 || slice.Endpoints[0].Hostname == nil || *slice.Endpoints[0].Hostname != "app-0-0" {
		t.Errorf("headless Service 0's slice: %+v", slice.Endpoints)
	}
	if slice := s.EndpointSliceObject(1, "uid"); slice.Endpoints[0].Hostname != nil {
		t.Errorf("Service 1 is not headless, yet its endpoint has a hostname")
	}
}

func TestRender(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "testdata", "corefiles", "kubeadm.Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Corefile: root, CP: nil}
	a := corefiles.Addrs{Listen: []string{"127.0.0.9"}, Metrics: "127.0.0.1:1", Health: "127.0.0.1:2", Ready: "127.0.0.1:3"}
	got, err := env.renderWith("/k/config", PodsVerified, a)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"    kubernetes cluster.local in-addr.arpa ip6.arpa {\n       kubeconfig /k/config\n       pods verified\n", "bind 127.0.0.9", "ready 127.0.0.1:3"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	got, err = env.renderWith("/k/config", NSGuardClientsOff, a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "    nsguard {\n        clients off\n        kubeconfig /k/config\n    }\n    kubernetes ") {
		t.Errorf("nsguard block not before kubernetes:\n%s", got)
	}
}

func TestAuditLog(t *testing.T) {
	lines := []string{
		`{"auditID":"a","stage":"ResponseStarted","verb":"watch","userAgent":"coredns/1.15.0 (linux/amd64)","objectRef":{"resource":"services"},"requestURI":"/api/v1/services?resourceVersion=5&watch=true","stageTimestamp":"2026-01-01T00:00:00.000000Z"}`,
		`{"auditID":"a","stage":"ResponseComplete","verb":"watch","userAgent":"coredns/1.15.0 (linux/amd64)","objectRef":{"resource":"services"},"requestURI":"/api/v1/services?resourceVersion=5&watch=true","responseStatus":{"code":200},"stageTimestamp":"2026-01-01T00:00:00.004000Z"}`,
		`{"auditID":"b","stage":"ResponseStarted","verb":"watch","userAgent":"coredns/1.15.0 (linux/amd64)","objectRef":{"resource":"services"},"requestURI":"/api/v1/services?resourceVersion=5&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true","stageTimestamp":"2026-01-01T00:00:01.000000Z"}`,
		`{"auditID":"c","stage":"ResponseStarted","verb":"watch","userAgent":"coredns-nsguard","objectRef":{"resource":"pods"},"requestURI":"/api/v1/pods?watch=true&resourceVersion=7","stageTimestamp":"2026-01-01T00:00:01.000000Z"}`,
		`{"auditID":"d","stage":"ResponseComplete","verb":"list","userAgent":"` + UserAgent + `","objectRef":{"resource":"pods"},"requestURI":"/api/v1/pods"}`,
		`{"auditID":"e","stage":"ResponseComplete","verb":"list","userAgent":"coredns-nsguard","objectRef":{"resource":"pods"},"requestURI":"/api/v1/pods?limit=500&continue=xyz"}`,
		`{"auditID":"f","stage":"ResponseComplete","verb":"list","userAgent":"coredns-nsguard","objectRef":{"resource":"services"},"requestURI":"/api/v1/services?limit=1"}`,
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reqs, err := AuditLog{Path: path}.Since(0)
	if err != nil {
		t.Fatal(err)
	}
	if got := Probes(reqs).String(); got != "coredns-nsguard: services 1" {
		t.Errorf("probes: %s", got)
	}
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5 (this package's own left out): %+v", len(reqs), reqs)
	}
	if got := OpenWatches(reqs).String(); got != "coredns: services 1; coredns-nsguard: pods 1" {
		t.Errorf("open watches: %s", got)
	}
	if got := FullStates(reqs).String(); got != "coredns: services 1" {
		t.Errorf("full-state requests: %s", got)
	}
	seq := sequences(reqs, Counts{{"coredns", "services"}: 1})
	if len(seq) != 1 || seq[0] != "coredns services: watch rv=5: 200 after 4ms → streaming list (watch, sendInitialEvents) rv=5: open" {
		t.Errorf("sequence: %q", seq)
	}
}

// The README's rule at the full size: 64 MiB + 18 KiB × 20,000 Services + 50,000 Pods / 400
// MiB, and GOMEMLIMIT at 90% of it.
func TestMemoryLimitRule(t *testing.T) {
	if got, want := MemoryLimit(Full), uint64(541)<<20; got != want {
		t.Errorf("MemoryLimit(Full) = %d MiB, want %d MiB", got>>20, want>>20)
	}
	if got := GoMemLimit(100 << 20); got != 90<<20 {
		t.Errorf("GoMemLimit(100 MiB) = %d, want 90 MiB", got)
	}
}

// ReadMem reads a live process's memory lines, and fails on one that is not there.
func TestReadMem(t *testing.T) {
	buf := make([]byte, 8<<20)
	for i := range buf {
		buf[i] = 1 // resident, not only reserved
	}
	m, err := ReadMem(os.Getpid())
	runtime.KeepAlive(buf)
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS < uint64(len(buf)) || m.HWM < m.RSS || m.Anon == 0 || m.File == 0 {
		t.Errorf("ReadMem(self) = %+v, want VmRSS at least %d and VmHWM at least VmRSS", m, len(buf))
	}
	if _, err := ReadMem(1 << 30); err == nil {
		t.Error("ReadMem of a pid that does not exist: no error")
	}
}
