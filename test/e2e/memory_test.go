//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nsguard/nsguard/test/e2e/scale"
)

// peakBudget is how far above the kubernetes plugin alone CoreDNS's peak may go with a bare
// nsguard at a tenth of the scale cluster. make bench-scale measures the full size.
const peakBudget = 1.25

// TestMemoryAtScale runs the kubeadm Corefile at a tenth of the scale cluster with realistic
// objects (Pods of about 9 KB), on a control plane of its own with an audit log: CoreDNS with
// the kubernetes plugin alone, then with a bare nsguard. Each goes through the sync and a relist
// after an API server restart. nsguard's peak must stay within peakBudget of the plugin alone,
// and it must open no watch of its own on what the kubernetes plugin already watches.
func TestMemoryAtScale(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	cp, audit, err := scale.StartControlPlane(ctx, env.binDir, filepath.Join(dir, "cluster"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	cs, err := scale.Client(cp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scale.Create(ctx, cs, scale.Tenth, scale.DefaultWorkers, t.Logf); err != nil {
		t.Fatal(err)
	}
	e := scale.Env{CP: cp, Client: cs, CoreDNS: env.coredns, Dir: dir, IP: "127.53.40.1", AuditLog: audit, Logf: t.Logf}
	t.Run("memory", func(t *testing.T) { memoryAtScale(t, e) })
	t.Run("reload", func(t *testing.T) { reloadAtScale(t, e) })
}

func memoryAtScale(t *testing.T, e scale.Env) {
	ctx := t.Context()
	var results []scale.Result
	for _, cfg := range []scale.Config{scale.KubernetesAlone, scale.NSGuard} {
		r, err := scale.Measure(ctx, e, cfg)
		if err != nil {
			t.Fatalf("%s: %v", cfg.Name, err)
		}
		if !r.Relist.Observed {
			t.Errorf("%s: the API server restart caused no relist: %+v", cfg.Name, r.Relist)
		}
		results = append(results, r)
	}
	t.Logf("at %s:\n%s", scale.Tenth, scale.Table(results))
	alone, guard := results[0], results[1]
	if ratio := float64(guard.Peak()) / float64(alone.Peak()); ratio > peakBudget {
		t.Errorf("peak resident memory %s with nsguard, %s alone: %.2f times, over the budget of %.2f",
			scale.MiB(float64(guard.Peak())), scale.MiB(float64(alone.Peak())), ratio, peakBudget)
	}
	for k := range guard.Watches.Of("coredns-nsguard") {
		if !strings.HasSuffix(k.Resource, "pods") {
			t.Errorf("nsguard watches %s itself; it must read the kubernetes plugin's caches", k.Resource)
		}
	}
}

// reloadAtScale: a Corefile reload changes no decision. A kube-system Pod under 'allow client
// kube-system' in mode refuse, asking without pause across a reload, is never refused; every
// line of the other client names its Pod; and nsguard lists no Pods again.
func reloadAtScale(t *testing.T, e scale.Env) {
	r, err := scale.Reload(t.Context(), e, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", r)
	if r.Refused != 0 || r.Failed != 0 || r.Asked < 100 {
		t.Errorf("the allowed client got %d refusals and %d unanswered questions in %d across the reload; want none in at least 100", r.Refused, r.Failed, r.Asked)
	}
	if len(r.LinesNoPod) != 0 || len(r.AllowedLines) != 0 {
		t.Errorf("%d lines name no Pod, %d are about the allowed client:\n%s", len(r.LinesNoPod), len(r.AllowedLines),
			strings.Join(append(r.LinesNoPod, r.AllowedLines...), "\n"))
	}
	if r.Lines == 0 {
		t.Error("no line after the reload: the refused client's answers were not logged")
	}
	if n := r.PodLists.Of("coredns-nsguard").Total(); n != 0 {
		t.Errorf("nsguard listed Pods %d times after the reload (%v); the reload must hand its Pods over", n, r.PodLists)
	}
}
