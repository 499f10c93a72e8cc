//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

const findingsMetric = "coredns_nsguard_findings"

// findingLines are nsguard's lines about findings of its live checks so far that hold all of want.
func (p *pod) findingLines(want ...string) []string {
	var out []string
next:
	for _, l := range strings.Split(p.dns.Log(), "\n") {
		if !strings.Contains(l, "plugin/nsguard: cluster finding") {
			continue
		}
		for _, w := range want {
			if !strings.Contains(l, w) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

// captures is the findings gauge of namespace-captures-service, over every severity.
func (p *pod) captures(t *testing.T) (float64, bool) {
	page := scrape(t, p.dns)
	return coredns.Sum(page, findingsMetric, "check=namespace-captures-service"), len(coredns.Samples(page, findingsMetric)) > 0
}

// waitFor polls ok every 50 ms for up to limit and says how long it took.
func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, limit, true, func(context.Context) (bool, error) { return ok(), nil }); err != nil {
		t.Fatalf("%s: not within %v", what, limit)
	}
	return time.Since(start)
}

// The trap is set before anyone falls in: with Service my-app in new-namespace-2, creating
// namespace my-app makes nsguard log one line and count one finding within 5 s, before any
// client asks; deleting it takes the finding back. A Corefile reload in between neither
// repeats the line nor loses a finding made while it ran.
func TestLiveFindings(t *testing.T) {
	cs := env.cp.Clientset()
	// The incident's namespace my-app goes first; the cluster gets it back after.
	if err := cluster.FinalizeNamespaceDeletion(t.Context(), cs, cluster.LegacyNamespace); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if err := cluster.FinalizeNamespaceDeletion(ctx, cs, "com"); err != nil {
			t.Error(err)
		}
		if err := cluster.ApplyIncident(ctx, cs, clientPodIP); err != nil {
			t.Errorf("restoring the fixtures: %v", err)
		}
	})
	cfg := coredns.Config{Reload: "2s", NSGuard: withView("namespace_events")}
	p := startDNS(t, "127.53.1.27", cfg)
	p.waitSynced(t)
	var base float64
	waitFor(t, 10*time.Second, "the findings gauge on /metrics", func() (ok bool) { base, ok = p.captures(t); return ok })
	myApp := []string{`cluster finding "Namespace my-app": check=namespace-captures-service`}
	if l := p.findingLines(myApp...); len(l) != 0 {
		t.Fatalf("a capture by my-app before the namespace exists: %q", l)
	}

	if out, err := env.cp.Kubectl(t.Context(), "create", "namespace", cluster.LegacyNamespace); err != nil {
		t.Fatalf("kubectl create namespace: %v: %s", err, out)
	}
	took := waitFor(t, 5*time.Second, "the capture by namespace my-app logged and counted", func() bool {
		n, _ := p.captures(t)
		return n == base+1 && len(p.findingLines(myApp...)) > 0
	})
	line := p.findingLines(myApp...)
	t.Logf("namespace my-app made: gauge %v -> %v and the line within %v:\n%s", base, base+1, took.Round(time.Millisecond), strings.Join(line, "\n"))
	for _, want := range []string{"[WARNING]", "severity=warning", `name="my-app.svc.cluster.local."`,
		"Service my-app exists in new-namespace-2; use my-app.new-namespace-2", "allow namespace my-app"} {
		if !strings.Contains(line[0], want) {
			t.Errorf("the line lacks %q", want)
		}
	}
	// namespace_events: the Namespace's Events say what it captures. (kubectl describe
	// namespace shows no Events; they are in default, where cluster-scoped objects' go.)
	var listed []byte
	took = waitFor(t, 10*time.Second, "the Event on namespace my-app", func() bool {
		out, err := env.cp.Kubectl(t.Context(), "get", "events", "-n", "default",
			"--field-selector", "involvedObject.kind=Namespace,involvedObject.name="+cluster.LegacyNamespace)
		listed = out
		return err == nil && strings.Contains(string(out), "DNSNamespaceCapturesService")
	})
	t.Logf("kubectl get events of namespace my-app, %v after the line:\n%s", took.Round(time.Millisecond), listed)

	// A reload, and namespace com (a top-level domain's name) made while it runs.
	cfg.IP, cfg.Kubeconfig, cfg.ZoneDir, cfg.Metrics = p.dns.IP, env.cp.Kubeconfig, env.zoneDir, p.dns.Metrics
	cfg.NSGuard = withView("log_interval 2m", "namespace_events")
	done := strings.Count(p.dns.Log(), "Reloading complete")
	if err := p.dns.Reload(cfg.Corefile()); err != nil {
		t.Fatal(err)
	}
	if out, err := env.cp.Kubectl(t.Context(), "create", "namespace", "com"); err != nil {
		t.Fatalf("kubectl create namespace com: %v: %s", err, out)
	}
	waitFor(t, 20*time.Second, "the reload", func() bool { return strings.Count(p.dns.Log(), "Reloading complete") > done })
	com := []string{`cluster finding "Namespace com": check=reserved-namespace`}
	waitFor(t, 10*time.Second, "namespace com's finding after the reload", func() bool { return len(p.findingLines(com...)) > 0 })
	time.Sleep(3 * time.Second) // the new instance's first looks are done
	if n, _ := p.captures(t); n != base+1 {
		t.Errorf("after the reload the gauge reads %v, want %v", n, base+1)
	}
	if l := p.findingLines(myApp...); len(l) != 1 {
		t.Errorf("after the reload, %d lines of the capture, want 1:\n%s", len(l), strings.Join(l, "\n"))
	}
	if l := p.findingLines(com...); len(l) != 1 {
		t.Errorf("%d lines of namespace com, want 1:\n%s", len(l), strings.Join(l, "\n"))
	}
	if n := coredns.Sum(scrape(t, p.dns), findingsMetric, "check=reserved-namespace", "severity=info"); n < 1 {
		t.Errorf("reserved-namespace info gauge %v, want at least 1", n)
	}

	// The namespace deleted: the gauge drops and a line says so.
	if err := cluster.FinalizeNamespaceDeletion(t.Context(), cs, cluster.LegacyNamespace); err != nil {
		t.Fatal(err)
	}
	gone := []string{`cluster finding gone "Namespace my-app": check=namespace-captures-service`}
	took = waitFor(t, 5*time.Second, "the capture's end logged and counted", func() bool {
		n, _ := p.captures(t)
		return n == base && len(p.findingLines(gone...)) == 1
	})
	t.Logf("namespace my-app deleted: gauge back to %v and the line within %v:\n%s", base, took.Round(time.Millisecond), strings.Join(p.findingLines(gone...), "\n"))
	if l := p.findingLines(myApp...); len(l) != 1 {
		t.Errorf("%d lines of the capture in all, want 1", len(l))
	}
}
