//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// TestExplainAgreesWithCoreDNS checks explain's CoreDNS column against what the real
// CoreDNS answers for each in-zone candidate of the incident's lookup.
func TestExplainAgreesWithCoreDNS(t *testing.T) {
	c, err := model.LoadLive(t.Context(), env.cp.Clientset())
	if err != nil {
		t.Fatal(err)
	}
	p := startDNS(t, "127.53.1.40", coredns.Config{})
	for _, name := range []string{cluster.AppService, cluster.AppService + "." + cluster.AppNamespace, cluster.OtherApp1 + "." + cluster.LegacyNamespace} {
		e := model.Explain(c, name, cluster.ClientNamespace, model.ExplainOptions{})
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
	e := model.Explain(c, cluster.AppService, cluster.ClientNamespace, model.ExplainOptions{})
	if e.CoreDNS.Meant || e.CoreDNS.MuslStop != 1 || !e.Candidates[1].CoreDNS.NoData() {
		t.Errorf("incident: %+v", e.CoreDNS)
	}
}

// TestAuditLive finds the incident's capture on the real control plane.
func TestAuditLive(t *testing.T) {
	c, err := model.LoadLive(t.Context(), env.cp.Clientset())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range audit.Audit(c.Names(), "cluster.local") {
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

// TestCLIKubectlPlugin runs the CLI as kubectl runs a plugin: kubectl-nsguard on the PATH,
// called by the real kubectl, with kubectl's flags, against the real API server.
func TestCLIKubectlPlugin(t *testing.T) {
	pluginDir := t.TempDir()
	plugin := filepath.Join(pluginDir, "kubectl-nsguard")
	if err := os.Symlink(nsguardCLI(t), plugin); err != nil {
		t.Fatal(err)
	}
	kubectl := func(t *testing.T, args ...string) ([]byte, int) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), env.cp.KubectlPath(), args...)
		cmd.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+env.cp.Kubeconfig)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return out, 0
		case errors.As(err, &exit):
			return out, exit.ExitCode()
		}
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		return nil, 0
	}
	if out, _ := kubectl(t, "plugin", "list"); !bytes.Contains(out, []byte(plugin)) {
		t.Errorf("kubectl plugin list does not show %s:\n%s", plugin, out)
	}
	tests := []struct {
		name string
		args []string
		code int // -1: not checked
		want []string
		not  string // must not be in the output
	}{
		{"audit", []string{"nsguard", "audit"}, 1, []string{"namespace-captures-service", "namespace my-app captures"}, ""},
		{"audit with kubectl's flags", []string{"nsguard", "audit", "--kubeconfig", env.cp.Kubeconfig, "-o", "json", "-n", cluster.ClientNamespace},
			1, []string{`"version": 2`, `"check": "namespace-captures-service"`}, ""},
		// The capture spares the namespace that holds my-app; what other suites applied may show.
		{"audit for the one namespace spared", []string{"nsguard", "audit", "--namespace=" + cluster.AppNamespace}, -1, nil, "namespace my-app captures"},
		{"explain", []string{"nsguard", "explain", cluster.AppService, "-n", cluster.ClientNamespace},
			1, []string{"most likely meant: Service my-app in " + cluster.AppNamespace}, ""},
		{"no such context", []string{"nsguard", "audit", "--context", "nope"}, 2, []string{"kubectl nsguard: kubeconfig: ", `"nope"`}, ""},
		// kubectl's own flags, as kubectl takes them: the context's namespace without -n.
		{"explain in the context's namespace", []string{"nsguard", "explain", cluster.AppService, "--request-timeout", "20s"},
			-1, []string{cluster.AppService + " from namespace default "}, ""},
		{"kubectl's --server", []string{"nsguard", "audit", "--server", "https://127.0.0.1:1"}, 2, []string{"127.0.0.1:1"}, ""},
		{"old spelling", []string{"nsguard", "audit", "-output", "json"}, 2, []string{"use --output"}, ""},
		{"help names the plugin", []string{"nsguard", "--help"}, 0, []string{"kubectl nsguard audit"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := kubectl(t, tt.args...)
			if tt.not != "" && bytes.Contains(out, []byte(tt.not)) {
				t.Errorf("kubectl %s: output holds %q:\n%s", strings.Join(tt.args, " "), tt.not, out)
			}
			if tt.code >= 0 && code != tt.code {
				t.Errorf("kubectl %s: exit %d, want %d\n%s", strings.Join(tt.args, " "), code, tt.code, out)
			}
			for _, w := range tt.want {
				if !bytes.Contains(out, []byte(w)) {
					t.Errorf("kubectl %s: output lacks %q:\n%s", strings.Join(tt.args, " "), w, out)
				}
			}
		})
	}
}
