package clusterview

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	k8splugin "github.com/coredns/coredns/plugin/kubernetes"
	"github.com/coredns/coredns/plugin/kubernetes/object"

	"github.com/nsguard/nsguard/test/e2e/scale"
)

// peakEnv, set, makes the test binary a child of BenchmarkPodsPeak: it watches the Pods of the
// API server at its URL, and reports its peak resident memory once it names the last one.
const peakEnv = "NSGUARD_PODS_PEAK"

func TestMain(m *testing.M) {
	if url := os.Getenv(peakEnv); url != "" {
		os.Exit(podsPeakChild(url))
	}
	os.Exit(m.Run())
}

// peakPods is how many Pods BenchmarkPodsPeak serves: the scale issue's 50,000.
const peakPods = 50_000

// peakPod is Pod p as a cluster holds it: the scale suite's Pod with its status and the
// managedFields the API server adds, about 7 KB in protobuf.
func peakPod(p int) *corev1.Pod {
	pod := scale.Full.PodObject(p)
	pod.Status = scale.Full.PodStatus(p)
	pod.UID = types.UID(fmt.Sprintf("uid-%d", p))
	pod.ResourceVersion = standInVersion
	pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(strings.Repeat(`{"f:status":{}}`, 150))}}
	return pod
}

// BenchmarkPodsPeak: the peak resident memory (VmHWM) of a process whose view watches 50,000
// Pods of about 7 KB, from its start to naming the last one, as a streamed list and as one
// list (an API server with its WatchList feature off lists from its cache at once). Run it
// with -benchtime 1x: each round is a process of its own.
func BenchmarkPodsPeak(b *testing.B) {
	pods := make([]*corev1.Pod, peakPods)
	for p := range pods {
		pods[p] = peakPod(p)
	}
	last := pods[len(pods)-1].Status.PodIP
	for _, mode := range []string{"streamed", "list"} {
		b.Run("mode="+mode, func(b *testing.B) {
			s := newAPIServer(b, pods...)
			s.refuseStreams = mode == "list"
			for b.Loop() {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), peakEnv+"="+s.url, "NSGUARD_PODS_PEAK_LAST="+last)
				cmd.Stderr = os.Stderr
				out, err := cmd.Output()
				if err != nil {
					b.Fatalf("child: %v: %s", err, out)
				}
				var peakKB, syncMS float64
				if _, err := fmt.Sscanf(string(out), "peak %g kB synced %g ms", &peakKB, &syncMS); err != nil {
					b.Fatalf("child said %q: %v", out, err)
				}
				b.ReportMetric(peakKB/1024, "peak-MiB")
				b.ReportMetric(syncMS/1000, "sync-s")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

func podsPeakChild(url string) int {
	last := netip.MustParseAddr(os.Getenv("NSGUARD_PODS_PEAK_LAST"))
	cfg := &rest.Config{Host: url}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	v := New(Config{Client: cs, REST: cfg, Clients: true})
	r := v.Start(noServices{})
	defer r.Stop()
	for v.Pod(last) == "" {
		if time.Since(start) > 10*time.Minute {
			fmt.Fprintln(os.Stderr, "the view did not name the last Pod in 10 minutes")
			return 1
		}
		time.Sleep(10 * time.Millisecond)
	}
	synced := time.Since(start)
	peak, err := vmHWM()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("peak %d kB synced %d ms\n", peak, synced.Milliseconds())
	return 0
}

// vmHWM is this process's peak resident memory, in kB.
func vmHWM() (int, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// noServices is a kubernetes plugin that has synced and holds nothing.
type noServices struct{}

func (noServices) ServiceList() []*object.Service     { return nil }
func (noServices) SvcIndex(string) []*object.Service  { return nil }
func (noServices) EpIndex(string) []*object.Endpoints { return nil }
func (noServices) GetNamespaceByName(string) (*object.Namespace, error) {
	return nil, errors.New("none")
}
func (noServices) HasSynced() bool                       { return true }
func (noServices) Modified(k8splugin.ModifiedMode) int64 { return 0 }
