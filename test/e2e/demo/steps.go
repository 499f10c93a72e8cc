package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// fixTarget is where the blog's ExternalName Service points.
var fixTarget = cluster.AppService + "." + cluster.AppNamespace + ".svc.cluster.local"

func (d *demo) build() error {
	d.header("Building")
	d.say("A first run builds kube-apiserver, etcd and kubectl from source: about 10 minutes. Later runs take seconds.")
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	if err := d.timed("kube-apiserver, etcd, kubectl", func() (err error) {
		d.toolsBin, err = cluster.BuildTools(d.ctx)
		return err
	}); err != nil {
		return err
	}
	if err := d.timed("CoreDNS v1.15.0 with nsguard", func() (err error) {
		bin := filepath.Join(d.work, "bin")
		if err := mkdir(bin); err != nil {
			return err
		}
		d.corednsBin, err = coredns.Build(d.ctx, root, bin)
		return err
	}); err != nil {
		return err
	}
	if err := d.timed("nsguard, the operator CLI", func() error {
		d.cliBin = filepath.Join(d.work, "bin", "nsguard")
		cmd := exec.CommandContext(d.ctx, "go", "build", "-o", d.cliBin, "./cmd/nsguard")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/nsguard: %v\n%s", err, out)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := d.timed("lookup programs for glibc, musl, Go and c-ares", func() (err error) {
		d.clients, err = resolvers.Build(d.ctx, filepath.Join(d.work, "resolvers"))
		return err
	}); err != nil {
		return err
	}
	if v, err := d.clients.CAresVersion(d.ctx); err != nil || v != model.CAresVersion {
		return fmt.Errorf("expected the c-ares client to run with c-ares %s, the one nsguard explain models; it runs with %q (%v)", model.CAresVersion, v, err)
	}
	return nil
}

func (d *demo) cluster() error {
	d.header("The cluster")
	var err error
	if d.cp, err = cluster.Start(d.ctx, d.toolsBin, filepath.Join(d.work, "cluster")); err != nil {
		return err
	}
	if err := cluster.ApplyIncident(d.ctx, d.cp.Clientset(), clientIP); err != nil {
		return err
	}
	d.say("kube-apiserver and etcd run at %s, holding the objects of a real incident:", d.cp.Server)
	for _, args := range [][]string{{"get", "ns"}, {"get", "svc", "-A"}} {
		out, err := d.cp.Kubectl(d.ctx, args...)
		if err != nil {
			return err
		}
		d.say("$ kubectl %s", strings.Join(args, " "))
		d.show(string(out))
	}
	// The story below rests on these three facts.
	cs := d.cp.Clientset().CoreV1()
	if _, err := cs.Namespaces().Get(d.ctx, cluster.LegacyNamespace, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("expected a namespace %s: %w", cluster.LegacyNamespace, err)
	}
	if _, err := cs.Services(cluster.ClientNamespace).Get(d.ctx, cluster.AppService, metav1.GetOptions{}); err == nil {
		return fmt.Errorf("expected no Service %s in %s, found one", cluster.AppService, cluster.ClientNamespace)
	}
	svc, err := cs.Services(cluster.AppNamespace).Get(d.ctx, cluster.AppService, metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != cluster.AppClusterIP {
		return fmt.Errorf("expected Service %s/%s at %s: %v", cluster.AppNamespace, cluster.AppService, cluster.AppClusterIP, err)
	}
	d.say(`The company moved its apps out of one big namespace into several. A pod in new-namespace-1
calls https://my-app/ and means the Service my-app in new-namespace-2 (10.96.0.20), but there is
no my-app in new-namespace-1. And the old namespace, kept during the move, is called my-app.
On kube-dns that namespace answered with its own Services, other-app-1 and other-app-2: users
were logged out by the wrong app, and finding why took a day. This cluster runs CoreDNS.`)
	return nil
}

func (d *demo) startDNS() error {
	d.header("CoreDNS with nsguard, in log mode")
	dir := filepath.Join(d.work, "coredns")
	metrics, err := coredns.FreeTCPAddr()
	if err != nil {
		return err
	}
	if err := mkdir(dir); err != nil {
		return err
	}
	if err := coredns.WriteUpstreamZones(dir); err != nil {
		return err
	}
	d.cfg = coredns.Config{IP: dnsIP, Kubeconfig: d.cp.Kubeconfig, Metrics: metrics, ZoneDir: dir, Reload: "2s", NSGuard: d.nsguard("")}
	if d.dns, err = coredns.Start(d.ctx, d.corednsBin, dir, dnsIP, d.cfg.Corefile(), metrics, "cluster.local"); err != nil {
		return err
	}
	if err := d.dns.WaitViewSynced(d.ctx); err != nil {
		return err
	}
	d.say(`The Corefile's cluster.local block. nsguard is in mode log, the default. In a pod it reaches the
API server with its service account; here the kubeconfig stands in. 'events' puts an Event on the
Pod that asked:`)
	d.show(clusterBlock(d.cfg.Corefile()))
	d.say("Two more blocks stand in for the company's upstream DNS; it knows my-app.corp.example (%s).", coredns.CorpIP)

	d.resolvConf = filepath.Join(d.work, "resolv.conf")
	if err := resolvers.PodResolvConf(d.resolvConf, dnsIP, cluster.ClientNamespace); err != nil {
		return err
	}
	d.say("The client pod's /etc/resolv.conf, as kubelet writes it for namespace %s:", cluster.ClientNamespace)
	d.show(readFile(d.resolvConf))

	full := fixTarget
	m, err := d.waitAnswer(full, dns.TypeA, 15*time.Second, hasA(cluster.AppClusterIP))
	if err != nil {
		return fmt.Errorf("expected %s A to be %s: %w", full, cluster.AppClusterIP, err)
	}
	d.say("CoreDNS answers on %s:53. Asked for the full name, it finds the Service:", dnsIP)
	d.show(fmt.Sprintf("%s A  ->  %s", full, brief(m)))
	return nil
}

func (d *demo) trap() error {
	d.header(`The trap: the pod looks up "my-app"`)
	d.say("Each resolver, seeing the pod's resolv.conf above, looks up my-app:")
	res, err := d.lookupAll("my-app")
	if err != nil {
		return err
	}
	if err := expect(res, []resolvers.Kind{resolvers.Glibc, resolvers.Go, resolvers.CAres}, coredns.CorpIP); err != nil {
		return err
	}
	if r := res[resolvers.Musl]; r.OK() {
		return fmt.Errorf("expected musl to fail at the namespace's empty answer, it got %v", r.Addrs)
	}
	d.say("None of them reached %s, the Service the developer meant. Why: with ndots:5 the resolver", cluster.AppClusterIP)
	d.say("tries the search list one name at a time. What CoreDNS answers for each:")
	walk := []struct {
		suffix, meaning string
		ok              func(*dns.Msg) bool
	}{
		{"new-namespace-1.svc.cluster.local", "no Service my-app in new-namespace-1", isRcode(dns.RcodeNameError)},
		{"svc.cluster.local", "the namespace my-app: it exists, no error", isNoData},
		{"cluster.local", "not a cluster name", isRcode(dns.RcodeNameError)},
		{"corp.example", "outside the cluster, same name", hasA(coredns.CorpIP)},
	}
	for _, w := range walk {
		name := "my-app." + w.suffix
		m, err := resolvers.Query(d.ctx, dnsIP+":53", name, dns.TypeA)
		if err != nil {
			return err
		}
		if !w.ok(m) {
			return fmt.Errorf("%s A: expected %s, got %s", name, w.meaning, brief(m))
		}
		d.show(fmt.Sprintf("%-42s %-21s %s", name, brief(m), w.meaning))
	}
	d.say(`musl stops at the first empty answer: the lookup fails, as it would on Alpine.
glibc, Go and c-ares (since 1.18) go on, past the namespace, to my-app.corp.example: a wrong host, silently.
Either way the namespace my-app captured the name, and nothing in the cluster said so.`)
	return nil
}

func (d *demo) report() error {
	d.header("What nsguard reported")
	lines, err := d.waitLogs(0, "action=logged")
	if err != nil {
		return err
	}
	d.say("$ grep plugin/nsguard on the CoreDNS log (a line per client and question per minute, at most):")
	d.show(strings.Join(lines, "\n"))
	if err := d.events(); err != nil {
		return err
	}
	if err := d.offenders(); err != nil {
		return err
	}
	m, err := d.apexMetrics()
	if err != nil {
		return err
	}
	if m.get("nodata", "logged") == 0 {
		return fmt.Errorf(`expected %s{answer="nodata",action="logged"} above 0:%s`, apexMetric, "\n"+strings.Join(m.lines, "\n"))
	}
	d.say("$ curl %s/metrics | grep %s (every such answer, logged or not):", d.dns.Metrics, apexMetric)
	d.show(strings.Join(m.lines, "\n"))
	d.say(`Each line says who asked (client=, pod=), what they most likely typed (typed=), what they got,
and what to change (fix=). The counter says which namespace's Pods still depend on the trap
(client_namespace): it is what to alert on.`)
	return nil
}

func (d *demo) refuse() error {
	d.header("Refusing: mode refuse, switched on by a reload")
	d.cfg.NSGuard = d.nsguard("mode refuse")
	mark := len(d.dns.Log())
	start := time.Now()
	if err := d.dns.Reload(d.cfg.Corefile()); err != nil {
		return err
	}
	apex := "my-app.svc.cluster.local"
	m, err := d.waitAnswer(apex, dns.TypeA, 15*time.Second, isRcode(dns.RcodeNameError))
	if err != nil {
		return fmt.Errorf("expected %s A to turn NXDOMAIN after the reload: %w", apex, err)
	}
	d.say("The Corefile's nsguard block is now:")
	d.show(strings.ReplaceAll(d.cfg.NSGuard, "\n    ", "\n"))
	d.say("The reload plugin picked it up in %.1fs: %s A now answers %s.", time.Since(start).Seconds(), apex, brief(m))
	d.say(`The pod looks up "my-app" again:`)
	res, err := d.lookupAll("my-app")
	if err != nil {
		return err
	}
	if err := expect(res, resolvers.Kinds, coredns.CorpIP); err != nil {
		return err
	}
	lines, err := d.waitLogs(mark, "action=refused")
	if err != nil {
		return err
	}
	d.say("nsguard logs each refusal:")
	d.show(strings.Join(lines, "\n"))
	c, err := d.apexMetrics()
	if err != nil {
		return err
	}
	if c.get("nodata", "refused") == 0 {
		return fmt.Errorf(`expected %s{answer="nodata",action="refused"} above 0:%s`, apexMetric, "\n"+strings.Join(c.lines, "\n"))
	}
	d.say(`and counts it with action="refused":`)
	d.show(strings.Join(c.lines, "\n"))
	d.say(`NXDOMAIN sends every resolver on to its next search domain, musl included: clients now all
behave alike, and none stops at the namespace.`)
	if err := d.refuseLoud(); err != nil {
		return err
	}
	d.say(`Either way they reach my-app.corp.example at best, still not the Service in new-namespace-2:
refusing cannot know which Service was meant. The real fix is the one from the incident's blog post.`)
	return nil
}

// refuseLoud switches nsguard to rcode REFUSED, which stops glibc, musl and c-ares at the
// namespace apex, and shows that nsguard explain predicts just that.
func (d *demo) refuseLoud() error {
	d.cfg.NSGuard = d.nsguard("mode refuse\n        rcode REFUSED")
	if err := d.dns.Reload(d.cfg.Corefile()); err != nil {
		return err
	}
	apex := "my-app.svc.cluster.local"
	if _, err := d.waitAnswer(apex, dns.TypeA, 15*time.Second, isRcode(dns.RcodeRefused)); err != nil {
		return fmt.Errorf("expected %s A to turn REFUSED after the reload: %w", apex, err)
	}
	d.say(`'rcode REFUSED' is the other choice. After a reload, the pod looks up "my-app" again:`)
	res, err := d.lookupAll("my-app")
	if err != nil {
		return err
	}
	if err := expect(res, []resolvers.Kind{resolvers.Go}, coredns.CorpIP); err != nil {
		return err
	}
	for _, k := range []resolvers.Kind{resolvers.Glibc, resolvers.Musl, resolvers.CAres} {
		if r := res[k]; r.OK() {
			return fmt.Errorf("expected %v to stop at the REFUSED answer and fail, it got %s", k, result(r))
		}
	}
	args := []string{"explain", "my-app", "-n", cluster.ClientNamespace, "--kubeconfig", d.cp.Kubeconfig,
		"--search", strings.Join(resolvers.PodSearch(cluster.ClientNamespace), " "), "--mode", "refuse", "--rcode", "REFUSED"}
	out, _ := exec.CommandContext(d.ctx, d.cliBin, args...).Output() // exit status 1: not what my-app meant
	table := string(out)
	if i := strings.Index(table, "RESOLVER"); i >= 0 {
		table = table[i:]
	}
	for _, want := range []string{"glibc          candidate 2: fails", "musl           candidate 2: fails",
		"go             candidate 4: the upstream's answer", "c-ares " + model.CAresVersion + "  candidate 2: fails"} {
		if !strings.Contains(table, want) {
			return fmt.Errorf("expected nsguard explain to predict %q:\n%s", want, out)
		}
	}
	d.say("$ nsguard explain my-app -n %s --search '...' --mode refuse --rcode REFUSED   (its last lines)", cluster.ClientNamespace)
	d.show(table)
	d.say(`glibc, musl and c-ares stop their search at a REFUSED answer: the lookup fails, loudly, instead of
reaching another host. Only Go goes on. NXDOMAIN, the default, is the one that lets every resolver,
c-ares included, move on.`)
	d.cfg.NSGuard = d.nsguard("mode refuse")
	if err := d.dns.Reload(d.cfg.Corefile()); err != nil {
		return err
	}
	_, err = d.waitAnswer(apex, dns.TypeA, 15*time.Second, isRcode(dns.RcodeNameError))
	return err
}

// nsguard is the demo's nsguard block, with a line more.
func (d *demo) nsguard(line string) string {
	lines := []string{"kubeconfig " + d.cp.Kubeconfig, "events 1m"}
	if line != "" {
		lines = append([]string{line}, lines...)
	}
	return "nsguard {\n        " + strings.Join(lines, "\n        ") + "\n    }"
}

// events shows the Event on the client Pod, where its team looks.
func (d *demo) events() error {
	var out []byte
	for deadline := time.Now().Add(15 * time.Second); ; {
		var err error
		out, err = d.cp.Kubectl(d.ctx, "get", "events", "-n", cluster.ClientNamespace, "--field-selector", "reason=DNSNameThroughNamespace")
		if err != nil {
			return err
		}
		if strings.Contains(string(out), "pod/"+cluster.ClientPod) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("expected an Event on pod/%s, got:\n%s", cluster.ClientPod, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	d.say("The team that owns the Pod sees it where it looks:")
	d.say("$ kubectl get events -n %s --field-selector reason=DNSNameThroughNamespace", cluster.ClientNamespace)
	d.show(string(out))
	return nil
}

// offenders runs nsguard offenders on the CoreDNS log, as an operator would on kubectl logs.
func (d *demo) offenders() error {
	logFile := filepath.Join(d.work, "coredns.log")
	if err := os.WriteFile(logFile, []byte(d.dns.Log()), 0o644); err != nil {
		return err
	}
	out, err := exec.CommandContext(d.ctx, d.cliBin, "offenders", logFile).Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), cluster.ClientNamespace+"/"+cluster.ClientPod) {
		return fmt.Errorf("expected nsguard offenders to name pod %s/%s (exit status 1): %v\n%s", cluster.ClientNamespace, cluster.ClientPod, err, out)
	}
	d.say("$ kubectl -n kube-system logs -l k8s-app=kube-dns --prefix --timestamps | nsguard offenders")
	d.show(string(out))
	return nil
}

func (d *demo) fix() error {
	d.header("The fix from the blog post")
	if err := cluster.CreateExternalNameService(d.ctx, d.cp.Clientset(), cluster.ClientNamespace, cluster.AppService, fixTarget); err != nil {
		return err
	}
	d.say("An ExternalName Service my-app in the client's namespace, pointing at the real one:")
	d.show(fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %s, namespace: %s}\nspec: {type: ExternalName, externalName: %s}",
		cluster.AppService, cluster.ClientNamespace, fixTarget))
	out, err := d.cp.Kubectl(d.ctx, "get", "svc", "-n", cluster.ClientNamespace)
	if err != nil {
		return err
	}
	d.say("$ kubectl get svc -n %s", cluster.ClientNamespace)
	d.show(string(out))
	first := "my-app." + cluster.ClientNamespace + ".svc.cluster.local"
	if _, err := d.waitAnswer(first, dns.TypeA, 15*time.Second, hasA(cluster.AppClusterIP)); err != nil {
		return fmt.Errorf("expected CoreDNS to answer %s A with %s: %w", first, cluster.AppClusterIP, err)
	}
	before, err := d.apexMetrics()
	if err != nil {
		return err
	}
	mark := len(d.dns.Log())
	d.say(`The pod looks up "my-app" again:`)
	res, err := d.lookupAll("my-app")
	if err != nil {
		return err
	}
	if err := expect(res, resolvers.Kinds, cluster.AppClusterIP); err != nil {
		return err
	}
	time.Sleep(time.Second) // time for a late log line to show up, so silence means silence
	after, err := d.apexMetrics()
	if err != nil {
		return err
	}
	if after.total != before.total {
		return fmt.Errorf("expected nsguard's counter to stay at %v, it is %v", before.total, after.total)
	}
	answers, findings := splitFindings(nsguardLines(d.dns.Log()[mark:]))
	if len(answers) > 0 {
		return fmt.Errorf("expected no nsguard answer line after the fix, got:\n%s", strings.Join(answers, "\n"))
	}
	d.say(`Every client reaches the Service the developer meant: the first search candidate,
%s, now answers, so the namespace is never asked.
nsguard logs no answer, and its counters (logged and refused) still add up to %v.`, first, after.total)
	if len(findings) > 0 {
		d.say("What nsguard noticed in the cluster itself, with no client asking (its live findings):")
		d.show(strings.Join(findings, "\n"))
	}
	return nil
}
