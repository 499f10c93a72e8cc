//go:build e2e

package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// TestExplainAgreesWithCoreDNS checks explain's CoreDNS column against what the real
// CoreDNS answers for each in-zone candidate of the incident's lookup.
func TestExplainAgreesWithCoreDNS(t *testing.T) {
	c, err := audit.LoadLive(t.Context(), env.cp.Clientset())
	if err != nil {
		t.Fatal(err)
	}
	p := startDNS(t, "127.53.1.40", coredns.Config{})
	for _, name := range []string{cluster.AppService, cluster.AppService + "." + cluster.AppNamespace, cluster.OtherApp1 + "." + cluster.LegacyNamespace} {
		e := audit.Explain(c, name, cluster.ClientNamespace, audit.ExplainOptions{})
		checked := 0
		for _, cand := range e.Candidates {
			if cand.CoreDNS.Rcode == clusterdns.Upstream {
				continue // outside the zone: the suite's stand-in upstream, not cluster state
			}
			checked++
			res := p.ask(t, cand.Name, dns.TypeA)
			if got, want := dns.RcodeToString[res.Rcode], cand.CoreDNS.Rcode; got != want {
				t.Errorf("%s: CoreDNS answered %s, explain says %s", cand.Name, got, want)
			}
			if got, want := len(res.Answer) > 0, cand.CoreDNS.HasRecords(); got != want {
				t.Errorf("%s: CoreDNS has records %v (%v), explain says %v (%s)", cand.Name, got, res.Answer, want, cand.CoreDNS)
			}
		}
		if checked < 3 {
			t.Errorf("%s: only %d in-zone candidates", name, checked)
		}
	}
	e := audit.Explain(c, cluster.AppService, cluster.ClientNamespace, audit.ExplainOptions{})
	if e.CoreDNS.Meant || e.CoreDNS.MuslStop != 1 || !e.Candidates[1].CoreDNS.NoData() {
		t.Errorf("incident: %+v", e.CoreDNS)
	}
}

// TestAuditLive finds the incident's capture on the real control plane.
func TestAuditLive(t *testing.T) {
	c, err := audit.LoadLive(t.Context(), env.cp.Clientset())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range audit.Audit(c, "cluster.local") {
		if f.Check != audit.CheckNamespaceCapture || f.Objects[0].Name != cluster.LegacyNamespace {
			continue
		}
		if f.Severity != audit.Error || !f.CoreDNS.NoData() || len(f.KubeDNS.Records) != 2 {
			t.Errorf("finding %+v", f)
		}
		return
	}
	t.Error("no namespace-captures-service finding for namespace " + cluster.LegacyNamespace)
}

var cliOnce struct {
	sync.Once
	bin string
	err error
}

// nsguardCLI builds cmd/nsguard once for the suite, as an operator would install it.
func nsguardCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		root, err := cluster.RepoRoot()
		if err != nil {
			cliOnce.err = err
			return
		}
		cliOnce.bin = filepath.Join(filepath.Dir(env.zoneDir), "nsguard") // removed with the suite's work dir
		build := exec.Command("go", "build", "-o", cliOnce.bin, "./cmd/nsguard")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			cliOnce.err = fmt.Errorf("go build ./cmd/nsguard: %v\n%s", err, out)
		}
	})
	if cliOnce.err != nil {
		t.Fatal(cliOnce.err)
	}
	return cliOnce.bin
}
