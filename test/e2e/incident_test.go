//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/clusterdns"
	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// What each name gives when nothing captures it.
const (
	corp      = coredns.CorpIP       // my-app.corp.example, the pod's last search domain
	otherApp1 = cluster.OtherApp1IP  // other-app-1.my-app: the ExternalName in namespace my-app, to a Service in legacy-a
	app       = cluster.AppClusterIP // my-app.new-namespace-2: the Service the developer meant
)

// trapped is what the trap does today: musl stops at the namespace apex NODATA; glibc, Go
// and c-ares (from 1.18) go on to the corporate domain. Nobody reaches the Service meant.
var trapped = map[resolvers.Kind]string{resolvers.Glibc: corp, resolvers.Musl: failed, resolvers.Go: corp, resolvers.CAres: corp}

const apex = "my-app.svc.cluster.local."

// (a) The trap as it is today, with no nsguard.
func TestTrapWithoutNSGuard(t *testing.T) {
	p := startDNS(t, "127.53.1.1", coredns.Config{})
	if res := p.ask(t, apex, dns.TypeA); !isNoData(res) {
		t.Errorf("the namespace apex gave %v, want NODATA with the SOA", res)
	}
	p.expect(t, "my-app", trapped)
	p.expect(t, "other-app-1.my-app", every(otherApp1))
	p.expect(t, "my-app.new-namespace-2", every(app))
	up := p.dns.IP + ":53" // it answers corp.example from its own stand-in blocks
	predicts(t, "my-app", cluster.ClientNamespace, "", up, trapped)
	predicts(t, "other-app-1.my-app", cluster.ClientNamespace, "", up, every(otherApp1))
	predicts(t, "my-app.new-namespace-2", cluster.ClientNamespace, "", up, every(app))
}

// (b) Mode log: the same answers, one line naming the client, question and namespace,
// and the counter on the real /metrics endpoint.
func TestLogMode(t *testing.T) {
	p := startDNS(t, "127.53.1.2", coredns.Config{NSGuard: "nsguard"})
	p.expect(t, "my-app", trapped)
	p.expect(t, "other-app-1.my-app", every(otherApp1))
	p.expect(t, "my-app.new-namespace-2", every(app))

	lines := p.nsguardLines()
	if len(lines) == 0 {
		t.Fatal("nsguard logged nothing")
	}
	for _, want := range []string{`answer through namespace "my-app"`, "client=" + clientPodIP, `question="my-app.svc.cluster.local. A"`,
		`typed="my-app"`, "answer=nodata", "action=logged"} {
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("no log line holds %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	// One line per client question within log_interval, however often the resolvers asked.
	if n := strings.Count(strings.Join(lines, "\n"), `question="my-app.svc.cluster.local. A"`); n != 1 {
		t.Errorf("%d lines for the same client and question, want 1", n)
	}
	if got := p.apexAnswers(t)["logged/nodata"]; got < 3 {
		t.Errorf("logged/nodata counter is %v, want at least one per resolver", got)
	}
}

// (c) Mode refuse: every resolver, musl included, goes on to my-app.corp.example; the
// names that meant something still resolve.
func TestRefuseMode(t *testing.T) {
	p := startDNS(t, "127.53.1.3", coredns.Config{NSGuard: "nsguard {\n        mode refuse\n    }"})
	res := p.ask(t, apex, dns.TypeA)
	if !isNXDomain(res) || res.Ns[0].Header().Name != "cluster.local." {
		t.Errorf("the namespace apex gave %v, want NXDOMAIN with the cluster.local SOA", res)
	}
	p.expect(t, "my-app", every(corp))
	p.expect(t, "other-app-1.my-app", every(otherApp1))
	p.expect(t, "my-app.new-namespace-2", every(app))
	predicts(t, "my-app", cluster.ClientNamespace, clusterdns.NXDomain, p.dns.IP+":53", every(corp))
	if got := p.apexAnswers(t)["refused/nodata"]; got < 3 {
		t.Errorf("refused/nodata counter is %v, want at least one per resolver", got)
	}
	if lines := p.nsguardLines(); len(lines) == 0 || !strings.Contains(lines[0], "action=refused") {
		t.Errorf("want a line with action=refused, got %q", lines)
	}
}

// (c2) Mode refuse with rcode REFUSED: glibc, musl and c-ares stop at the refusal and the
// lookup fails; Go alone goes on. As explain predicts.
func TestRefuseModeRefused(t *testing.T) {
	p := startDNS(t, "127.53.1.11", coredns.Config{NSGuard: "nsguard {\n        mode refuse\n        rcode REFUSED\n    }"})
	if res := p.ask(t, apex, dns.TypeA); res.Rcode != dns.RcodeRefused {
		t.Errorf("the namespace apex gave %v, want REFUSED", res)
	}
	stopped := map[resolvers.Kind]string{resolvers.Glibc: failed, resolvers.Musl: failed, resolvers.Go: corp, resolvers.CAres: failed}
	p.expect(t, "my-app", stopped)
	p.expect(t, "my-app.new-namespace-2", every(app))
	predicts(t, "my-app", cluster.ClientNamespace, model.Refused, p.dns.IP+":53", stopped)
}

// (d) The incident exactly, on kube-dns: see kubedns_test.go.

// (g) autopath runs the search list on the server and stops at the first answer that is
// not NXDOMAIN. Refusing turns the namespace apex NODATA into NXDOMAIN, so it goes on.
// cache serves the repeats; they must give what the first lookup gave.
func TestAutopathAndCache(t *testing.T) {
	base := coredns.Config{Before: []string{"autopath @kubernetes", "cache 30"}, Kubernetes: []string{"pods verified"}}
	first := "my-app.new-namespace-1.svc.cluster.local."

	t.Run("without nsguard", func(t *testing.T) {
		p := startDNS(t, "127.53.1.6", withUpstream(base, "127.53.1.6"))
		for range 2 {
			if res := p.ask(t, first, dns.TypeA); res.Rcode != dns.RcodeSuccess || len(res.Answer) != 0 {
				t.Errorf("autopath gave %v, want the namespace apex's NOERROR with no records", res)
			}
			p.expect(t, "my-app", trapped)
		}
	})
	t.Run("refuse", func(t *testing.T) {
		cfg := base
		cfg.NSGuard = "nsguard {\n        mode refuse\n    }"
		p := startDNS(t, "127.53.1.7", withUpstream(cfg, "127.53.1.7"))
		for range 2 {
			if res := p.ask(t, first, dns.TypeA); res.Rcode != dns.RcodeNameError {
				t.Errorf("autopath gave %v, want NXDOMAIN after walking every candidate", res)
			}
			p.expect(t, "my-app", every(corp))
		}
	})
}

// withUpstream sends what kubernetes does not own to the stand-in blocks of the same server:
// autopath also tries the host's search domains and the bare name, as in a real cluster's
// ".:53" block with "forward . /etc/resolv.conf".
func withUpstream(cfg coredns.Config, ip string) coredns.Config {
	cfg.Upstream = ip + ":53"
	return cfg
}

// (h) A Corefile reload from log to refuse takes effect without a restart.
func TestReloadToRefuse(t *testing.T) {
	cfg := coredns.Config{Reload: "2s", NSGuard: "nsguard"}
	p := startDNS(t, "127.53.1.8", cfg)
	p.expect(t, "my-app", trapped)

	cfg.IP, cfg.Kubeconfig, cfg.ZoneDir, cfg.Metrics = p.dns.IP, env.cp.Kubeconfig, env.zoneDir, p.dns.Metrics
	cfg.NSGuard = "nsguard {\n        mode refuse\n    }"
	if err := p.dns.Reload(cfg.Corefile()); err != nil {
		t.Fatal(err)
	}
	p.waitRcode(t, apex, dns.TypeA, dns.RcodeNameError)
	p.expect(t, "my-app", every(corp))
}

// (e) The blog's fix: an ExternalName my-app in the client's namespace. Every client gets
// the Service meant, and nsguard is silent.
func TestBlogFix(t *testing.T) {
	cs := env.cp.Clientset()
	if err := cluster.CreateExternalNameService(t.Context(), cs, cluster.ClientNamespace, "my-app", "my-app.new-namespace-2.svc.cluster.local"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Services(cluster.ClientNamespace).Delete(context.Background(), "my-app", deleteNow); err != nil {
			t.Errorf("removing the fix: %v", err)
		}
	})
	p := startDNS(t, "127.53.1.9", coredns.Config{NSGuard: "nsguard {\n        mode refuse\n    }"})
	p.waitRcode(t, "my-app.new-namespace-1.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess)
	p.expect(t, "my-app", every(app))
	if lines := p.nsguardLines(); len(lines) != 0 {
		t.Errorf("nsguard spoke: %q", lines)
	}
	if got := p.apexAnswers(t); len(got) != 0 {
		t.Errorf("namespace apex counters %v, want none", got)
	}
}

// (f) Delete namespace my-app (finalized by hand: there is no controller manager). The
// apex is NXDOMAIN, every resolver moves on, and nsguard is silent. Runs last: it changes
// the cluster, and puts it back after.
func TestNamespaceDeleted(t *testing.T) {
	cs := env.cp.Clientset()
	if err := cluster.FinalizeNamespaceDeletion(t.Context(), cs, cluster.LegacyNamespace); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.ApplyIncident(context.Background(), cs, clientPodIP); err != nil {
			t.Errorf("restoring the fixtures: %v", err)
		}
	})
	p := startDNS(t, "127.53.1.10", coredns.Config{NSGuard: "nsguard"})
	if res := p.waitRcode(t, apex, dns.TypeA, dns.RcodeNameError); !isNXDomain(res) {
		t.Errorf("the apex of a deleted namespace gave %v, want NXDOMAIN with the SOA", res)
	}
	p.expect(t, "my-app", every(corp))
	if lines := p.nsguardLines(); len(lines) != 0 {
		t.Errorf("nsguard spoke: %q", lines)
	}
}
