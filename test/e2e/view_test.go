//go:build e2e

package e2e

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/clusterview"
	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// withView is an nsguard block that watches the suite's cluster.
func withView(lines ...string) string {
	return "nsguard {\n        kubeconfig " + env.cp.Kubeconfig + "\n        " + strings.Join(lines, "\n        ") + "\n    }"
}

// waitSynced waits for nsguard's view to report synced on /metrics.
func (p *pod) waitSynced(t *testing.T) {
	t.Helper()
	if err := p.dns.WaitViewSynced(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// The client is named from its Pod's address, and the line says what to change.
func TestClientAndAdvice(t *testing.T) {
	p := startDNS(t, "127.53.1.20", coredns.Config{NSGuard: withView()})
	p.waitSynced(t)
	p.expect(t, "my-app", trapped)
	got := strings.Join(p.nsguardLines(), "\n")
	for _, want := range []string{
		"client=" + clientPodIP + " pod=new-namespace-1/client",
		`fix="no Service my-app in new-namespace-1; Service my-app exists in new-namespace-2; use my-app.new-namespace-2, or create an ExternalName Service my-app in new-namespace-1 pointing at my-app.new-namespace-2.svc.cluster.local`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no line holds %q:\n%s", want, got)
		}
	}
}

// The endpoint shadow, with a real headless Service and EndpointSlice, through glibc and musl.
func TestEndpointShadow(t *testing.T) {
	if err := cluster.ApplyShadow(t.Context(), env.cp.Clientset()); err != nil {
		t.Fatal(err)
	}
	shadow := "primary.db.new-namespace-1.svc.cluster.local."
	glibcMusl := func(want string) map[resolvers.Kind]string {
		return map[resolvers.Kind]string{resolvers.Glibc: want, resolvers.Musl: want, resolvers.Go: want, resolvers.CAres: want}
	}

	t.Run("without nsguard", func(t *testing.T) {
		p := startDNS(t, "127.53.1.21", coredns.Config{})
		p.waitRcode(t, shadow, dns.TypeA, dns.RcodeSuccess)
		p.expect(t, "primary.db", glibcMusl(cluster.ShadowEndpoint4)) // the endpoint wins, silently
	})
	t.Run("log", func(t *testing.T) {
		p := startDNS(t, "127.53.1.22", coredns.Config{NSGuard: withView()})
		p.waitSynced(t)
		p.expect(t, "primary.db", glibcMusl(cluster.ShadowEndpoint4))
		got := strings.Join(p.nsguardLines(), "\n")
		for _, want := range []string{`endpoint shadows a Service "primary.db"`, "pod=new-namespace-1/client",
			`meant="Service primary in namespace db"`, "action=logged"} {
			if !strings.Contains(got, want) {
				t.Errorf("no line holds %q:\n%s", want, got)
			}
		}
	})
	t.Run("mode refuse logs it", func(t *testing.T) {
		// Endpoint names are what StatefulSet peers use: mode refuse alone never refuses them.
		p := startDNS(t, "127.53.1.26", coredns.Config{NSGuard: withView("mode refuse")})
		p.waitSynced(t)
		if res := p.ask(t, shadow, dns.TypeA); res.Rcode != dns.RcodeSuccess || len(res.Answer) != 1 {
			t.Errorf("the shadowing endpoint gave %v, want its address", res)
		}
		p.expect(t, "primary.db", glibcMusl(cluster.ShadowEndpoint4))
		if got := strings.Join(p.nsguardLines(), "\n"); !strings.Contains(got, `endpoint shadows a Service "primary.db"`) {
			t.Errorf("no line tells of the shadow:\n%s", got)
		}
	})
	t.Run("endpoint_shadows refuse", func(t *testing.T) {
		p := startDNS(t, "127.53.1.23", coredns.Config{NSGuard: withView("mode refuse", "endpoint_shadows refuse")})
		p.waitSynced(t)
		if res := p.ask(t, shadow, dns.TypeA); !isNXDomain(res) {
			t.Errorf("the shadowing endpoint gave %v, want NXDOMAIN", res)
		}
		p.expect(t, "primary.db", glibcMusl(cluster.ShadowServiceIP)) // on to primary.db.svc.cluster.local
		p.expect(t, "my-app.new-namespace-2", every(app))             // an endpoint-shaped first candidate that shadows nothing
	})
}

// kube-apiserver killed and restarted mid-test: answers never stop, and the view catches up.
func TestAPIServerRestart(t *testing.T) {
	p := startDNS(t, "127.53.1.24", coredns.Config{NSGuard: withView("log_interval 100ms")})
	p.waitSynced(t)

	// Ask without pause for the whole outage; every question must be answered.
	var asked, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := &dns.Client{Timeout: time.Second}
		for {
			select {
			case <-stop:
				return
			default:
			}
			m := new(dns.Msg)
			m.SetQuestion(apex, dns.TypeA)
			asked.Add(1)
			if res, _, err := c.Exchange(m, p.dns.IP+":53"); err != nil || res.Rcode != dns.RcodeSuccess {
				failed.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	env.cp.StopAPIServer()
	time.Sleep(3 * time.Second) // long enough for the watches to fail
	// Cut off, the view keeps naming the client from its last known state, and says so.
	mark := len(p.nsguardLines())
	time.Sleep(500 * time.Millisecond)
	downLines := p.nsguardLines()[mark:]
	staleUses, staleGauge := metric(t, p, "coredns_nsguard_view_stale_decisions_total"), metric(t, p, "coredns_nsguard_view_stale")
	if err := env.cp.RestartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()

	// A Service my-app made after the restart must reach nsguard's advice for the apex within
	// 45 s: client-go's reflector retries after a back-off that doubles from 0.8 s with jitter,
	// as the kubernetes plugin's does. The apex answers throughout (namespace my-app exists),
	// so this measures nsguard's view and not the kubernetes plugin's.
	cs := env.cp.Clientset()
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.CreateExternalNameService(t.Context(), cs, "late", "my-app", "my-app.example.org"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.FinalizeNamespaceDeletion(context.Background(), cs, "late"); err != nil {
			t.Errorf("removing namespace late: %v", err)
		}
	})
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Until(restarted.Add(45*time.Second)), true, func(context.Context) (bool, error) {
		return strings.Contains(strings.Join(p.nsguardLines(), "\n"), "Service my-app exists in late, new-namespace-2"), nil
	}); err != nil {
		t.Fatalf("the view had not caught up 45s after the restart:\n%s", strings.Join(p.nsguardLines(), "\n"))
	}
	t.Logf("view caught up %v after the API server was back", time.Since(restarted).Round(10*time.Millisecond))
	close(stop)
	wg.Wait()
	if failed.Load() != 0 || asked.Load() < 50 {
		t.Errorf("%d of %d questions went unanswered during the restart", failed.Load(), asked.Load())
	}
	if len(downLines) == 0 || !strings.Contains(strings.Join(downLines, "\n"), "pod=new-namespace-1/client") {
		t.Errorf("while the API server was down, lines did not name the client from the last known view: %q", downLines)
	}
	if staleUses < 1 || staleGauge != 1 {
		t.Errorf("while the API server was down: view_stale_decisions_total %v, view_stale %v; want a count and 1", staleUses, staleGauge)
	}
	// A probe that failed during the outage keeps the view stale until the next one answers:
	// only a probe can tell that etcd is back too. That is at most one probe interval later.
	waitMetric(t, p.dns, "coredns_nsguard_view_stale", 0, clusterview.ProbeEvery+5*time.Second)
}

// metric sums the samples of one metric on the server's /metrics page.
func metric(t *testing.T, p *pod, name string, match ...string) float64 {
	t.Helper()
	return coredns.Sum(scrape(t, p.dns), name, match...)
}

// 50 Corefile reloads leave no goroutine or watch behind.
func TestReloadsDoNotLeak(t *testing.T) {
	p := startDNS(t, "127.53.1.25", coredns.Config{NSGuard: withView()})
	p.waitSynced(t)
	settle := func() int {
		time.Sleep(2 * time.Second)
		return goroutines(t, p)
	}
	before := settle()
	for i := range 50 {
		done := strings.Count(p.dns.Log(), "Reloading complete")
		if err := p.dns.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			return strings.Count(p.dns.Log(), "Reloading complete") != done, nil
		}); err != nil {
			t.Fatalf("reload %d did not complete:\n%s", i+1, p.dns.Log())
		}
	}
	p.waitSynced(t)
	p.expect(t, "my-app", trapped) // still serving, with nsguard
	after := settle()
	t.Logf("goroutines: %d before, %d after 50 reloads", before, after)
	if after > before+5 {
		t.Errorf("goroutines grew from %d to %d over 50 reloads", before, after)
	}
}

func goroutines(t *testing.T, p *pod) int {
	t.Helper()
	samples := coredns.Samples(scrape(t, p.dns), "go_goroutines")
	if len(samples) != 1 {
		t.Fatal("no go_goroutines on /metrics")
	}
	return int(samples[0].Value)
}
