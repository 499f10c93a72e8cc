//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/scale"
)

// The scale issue's cluster, namespaces and Services alone: what the webhook watches.
var webhookScale = scale.Size{Namespaces: 5000, ServicesPerNamespace: 4, PodsPerNamespace: 0, HeadlessEvery: 10}

const (
	benchPairs  = 1000
	benchWarmup = 50
	// benchLabel marks the namespaces created with no webhook: the bench's registration
	// leaves them out with an objectSelector, so that both kinds go through the same API
	// server, side by side, in one run.
	benchLabel = "nsguard-bench"
)

// webhookAuditPolicy logs, at Metadata level, every request of the webhook's ServiceAccount.
const webhookAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["system:serviceaccount:nsguard-system:nsguard-webhook"]
- level: None
`

// TestWebhookAtScale: with 5,000 namespaces and 20,000 Services in the API server, the
// webhook's peak resident memory (VmHWM) through its sync and through 2,000 namespace
// creations; and what it adds to a namespace creation, p50 and p99, measured as 1,000
// creations it reviews side by side with 1,000 it does not, alternating, in one run. The
// API server's audit log shows the webhook asked it nothing while it answered them.
func TestWebhookAtScale(t *testing.T) {
	began := time.Now()
	t.Cleanup(func() { t.Logf("whole test: %v", time.Since(began).Round(time.Second)) })
	ctx := t.Context()
	dir := t.TempDir()
	cp, err := cluster.StartWithOptions(ctx, env.binDir, filepath.Join(dir, "cluster"), cluster.Options{
		EtcdArgs:     []string{fmt.Sprintf("--quota-backend-bytes=%d", int64(scale.EtcdQuota))},
		AuditPolicy:  webhookAuditPolicy,
		ReadyTimeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	cs, err := scale.Client(cp)
	if err != nil {
		t.Fatal(err)
	}
	size := webhookScale
	for _, step := range []struct {
		what string
		n    int
		do   func(context.Context, int) error
	}{
		{"namespaces", size.Namespaces, func(ctx context.Context, j int) error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, scale.NamespaceObject(j), metav1.CreateOptions{})
			return err
		}},
		{"Services", size.Services(), func(ctx context.Context, k int) error {
			_, err := cs.CoreV1().Services(scale.Namespace(k/size.ServicesPerNamespace)).Create(ctx, size.ServiceObject(k), metav1.CreateOptions{})
			return err
		}},
	} {
		start := time.Now()
		if err := scale.Each(ctx, step.n, scale.DefaultWorkers, step.do); err != nil {
			t.Fatalf("creating %s: %v", step.what, err)
		}
		t.Logf("created %d %s in %v", step.n, step.what, time.Since(start).Round(100*time.Millisecond))
	}

	s := newWebhookStack(t, cp)
	// The binary as hack/check-webhook-image.sh builds the image's: its memory is the Pod's.
	s.bin = filepath.Join(t.TempDir(), "nsguard")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", s.bin, "./cmd/nsguard")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if build.Dir, err = cluster.RepoRoot(); err != nil {
		t.Fatal(err)
	}
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/nsguard: %v\n%s", err, out)
	}
	start := time.Now()
	s.start(t, "", true)
	synced := time.Since(start)
	memSync, err := scale.ReadMem(s.d.PID())
	if err != nil {
		t.Fatal(err)
	}
	s.register(t, s.url(), func(wh *admissionregistrationv1.ValidatingWebhook) {
		wh.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: benchLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"baseline"}}}}
	})
	// It holds the scale cluster: a namespace named like the last Service captures it.
	last := scale.ServiceName(size.Services() - 1)
	want := "Warning: nsguard: namespace " + last + " captures the short name of Service " + last + " in " + scale.Namespace(size.Namespaces-1)
	waitEffective(t, s, func() bool {
		_, errs, _, _ := kubectlAs(t, cp, "create", "namespace", last, "--dry-run=server")
		return strings.HasPrefix(errs, want)
	})

	with, without := benchCreations(t, cs)
	calls := webhookCounts(t, cp)
	memRun, err := scale.ReadMem(s.d.PID())
	if err != nil {
		t.Fatal(err)
	}
	q := func(d []time.Duration, p float64) time.Duration { return d[int(p*float64(len(d)-1)+0.5)] }
	p50w, p50b, p99w, p99b := q(with, .5), q(without, .5), q(with, .99), q(without, .99)
	t.Logf("namespace creation, %d of each, alternating: p50 %v with the webhook, %v without (ratio %.2f, +%v); p99 %v and %v (ratio %.2f, +%v)",
		benchPairs, p50w, p50b, float64(p50w)/float64(p50b), p50w-p50b, p99w, p99b, float64(p99w)/float64(p99b), p99w-p99b)
	t.Logf("webhook ready %v after its start (its log: %s)", synced.Round(time.Millisecond), grepLine(s.logText(), "Informers synced"))
	t.Logf("webhook peak resident memory (VmHWM) at %d namespaces and %d Services: %.1f MiB through its sync, %.1f MiB through %d creations (then VmRSS %.1f MiB: RssAnon %.1f MiB, RssFile %.1f MiB)",
		size.Namespaces, size.Services(), mib(memSync.HWM), mib(memRun.HWM), 2*(benchPairs+benchWarmup), mib(memRun.RSS), mib(memRun.Anon), mib(memRun.File))
	t.Logf("the API server's counts for %s: %.0f calls, %.0f failed open, %.0f rejected", webhookName, calls.calls, calls.failedOpen, calls.rejected)

	// The webhook reviewed every creation it was meant to, and no baseline one.
	if min := float64(benchPairs + benchWarmup); calls.calls < min || calls.calls > min+40 || calls.failedOpen != 0 {
		t.Errorf("the API server called the webhook %.0f times (%.0f failed open); want %.0f and the few probes", calls.calls, calls.failedOpen, min)
	}
	// The contract of failurePolicy Ignore and timeoutSeconds: a reviewed creation is never
	// held to the timeout (none failed open, above), and its p99 stays under it. The figures
	// above are what a review costs; they are logged, not asserted, on a shared machine.
	timeout := time.Duration(*s.shipped.config.Webhooks[0].TimeoutSeconds) * time.Second
	if p99w >= timeout {
		t.Errorf("p99 of a reviewed namespace creation is %v, not under the webhook's timeout %v", p99w, timeout)
	}
	limit := s.shipped.container.Resources.Limits.Memory().Value()
	if peak := max(memSync.HWM, memRun.HWM); float64(peak) > 0.8*float64(limit) {
		t.Errorf("peak %.1f MiB is over 80%% of the Deployment's memory limit %.0f MiB", mib(peak), mib(uint64(limit)))
	}
	// Answered from memory: the webhook's requests while it reviewed were its watches alone.
	asked := webhookRequests(t, cp.AuditLog(), start)
	t.Logf("the webhook's requests to the API server from its start, by verb and resource: %v", asked)
	for k := range asked {
		if verb, _, _ := strings.Cut(k, " "); verb != "list" && verb != "watch" {
			t.Errorf("the webhook sent %s requests: %v", k, asked)
		}
	}
}

// benchCreations creates benchPairs namespaces the webhook reviews and benchPairs it does not,
// one after another in turn (the order of each pair alternating), after benchWarmup pairs,
// and returns each kind's durations, sorted.
func benchCreations(t *testing.T, cs kubernetes.Interface) (with, without []time.Duration) {
	t.Helper()
	create := func(name string, baseline bool) time.Duration {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if baseline {
			ns.Labels = map[string]string{benchLabel: "baseline"}
		}
		start := time.Now()
		if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	for i := range benchWarmup + benchPairs {
		var w, b time.Duration
		if i%2 == 0 {
			w = create(fmt.Sprintf("bench-reviewed-%04d", i), false)
			b = create(fmt.Sprintf("bench-baseline-%04d", i), true)
		} else {
			b = create(fmt.Sprintf("bench-baseline-%04d", i), true)
			w = create(fmt.Sprintf("bench-reviewed-%04d", i), false)
		}
		if i >= benchWarmup {
			with, without = append(with, w), append(without, b)
		}
	}
	slices.Sort(with)
	slices.Sort(without)
	return with, without
}

// webhookRequests counts the requests the audit log holds from since, by verb and resource.
func webhookRequests(t *testing.T, path string, since time.Time) map[string]int {
	t.Helper()
	reqs, err := scale.AuditLog{Path: path}.Since(0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range reqs {
		if !r.Start.Before(since) || r.End.After(since) {
			out[r.Verb+" "+r.Resource]++
		}
	}
	return out
}

func grepLine(log, what string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, what) {
			return strings.TrimSpace(l[strings.Index(l, "]")+1:])
		}
	}
	return ""
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
