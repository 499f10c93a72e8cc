package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/node"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

const clientNS = "new-namespace-1"

func podOf(k resolvers.Kind) string { return "client-" + k.String() }

var kindLabel = map[resolvers.Kind]string{
	resolvers.Glibc: "glibc (Debian, Ubuntu, most images)",
	resolvers.Musl:  "musl (Alpine)",
	resolvers.Go:    "Go (its own resolver)",
	resolvers.CAres: "c-ares (Envoy, gRPC, curl)",
}

// sh runs a command line in a shell whose PATH has kubectl and kubectl-nsguard and whose
// KUBECONFIG is the node's, prints it and its output, and returns the output and exit status.
func (d *demo) sh(line string) (string, int, error) {
	cmd := exec.CommandContext(d.ctx, "bash", "-o", "pipefail", "-c", line)
	cmd.Dir = d.root // the runbook's paths are the repository's
	cmd.Env = append(os.Environ(), "PATH="+d.bin+":"+os.Getenv("PATH"), "KUBECONFIG="+d.n.CP.Kubeconfig,
		"KUBECACHEDIR="+filepath.Join(d.work, "kube-cache"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code, err = ee.ExitCode(), nil
	}
	d.say("$ %s", line)
	d.show(out.String())
	return out.String(), code, err
}

// must is sh that fails unless the command exits 0.
func (d *demo) must(line string) (string, error) {
	out, code, err := d.sh(line)
	if err == nil && code != 0 {
		err = fmt.Errorf("%s: exit status %d", line, code)
	}
	return out, err
}

func (d *demo) build() error {
	d.header("Building")
	d.say("A first run builds Kubernetes v1.37.2 from source (kube-apiserver, etcd, the controllers, kubelet,")
	d.say("kube-proxy, kubectl): 6 minutes on 2 idle cores, up to 20 on busy ones. Later runs take seconds.")
	var err error
	if d.root, err = cluster.RepoRoot(); err != nil {
		return err
	}
	tools, err := cluster.BuildTools(d.ctx)
	if err != nil {
		return err
	}
	d.bin = filepath.Join(d.work, "path")
	if err := os.MkdirAll(d.bin, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join(tools, "kubectl"), filepath.Join(d.bin, "kubectl")); err != nil {
		return err
	}
	build := exec.CommandContext(d.ctx, "go", "build", "-trimpath", "-o", filepath.Join(d.bin, "kubectl-nsguard"), "./cmd/nsguard")
	build.Dir, build.Env = d.root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/nsguard: %v\n%s", err, out)
	}
	d.say("Built; %s so far. Now the node: containerd and its images (built here with buildah: pause, CoreDNS", time.Since(d.start).Round(time.Second))
	d.say("v1.15.0 as released, the nsguard image of deploy/Dockerfile, a client per resolver), then the control plane.")
	d.n, err = node.Start(d.ctx, node.Options{BinDir: tools, Root: d.root, Dir: filepath.Join(d.work, "node")})
	return err
}

func (d *demo) cluster() error {
	d.header("The cluster: kubeadm's CoreDNS, the incident's namespaces, and the client Pods")
	if err := d.n.InstallKubeadmCoreDNS(d.ctx, d.root, filepath.Join(d.work, "kubeadm")); err != nil {
		return err
	}
	if err := d.n.Apply(d.ctx, node.Incident); err != nil {
		return err
	}
	for _, k := range resolvers.Kinds {
		if err := d.n.Apply(d.ctx, node.ClientPod(clientNS, podOf(k), k, "")); err != nil {
			return err
		}
	}
	for _, k := range resolvers.Kinds {
		if _, err := d.n.WaitRunning(d.ctx, clientNS, podOf(k), 2*time.Minute); err != nil {
			return err
		}
	}
	if _, err := d.must("kubectl get nodes -o wide"); err != nil {
		return err
	}
	if _, err := d.must("kubectl get pods -A -o wide"); err != nil {
		return err
	}
	if _, err := d.must("kubectl get svc -A"); err != nil {
		return err
	}
	d.say(`The company moved its apps out of one big namespace into several. The Pods in new-namespace-1 call
https://my-app/ and mean the Service my-app in new-namespace-2, but there is no my-app in new-namespace-1.
And the old namespace, kept during the move, is called my-app. CoreDNS is kubeadm's, unchanged.`)
	return nil
}

func (d *demo) appIP() (string, error) {
	out, err := d.n.Kubectl(d.ctx, "", "get", "svc", "-n", "new-namespace-2", "my-app", "-o", "jsonpath={.spec.clusterIP}")
	return strings.TrimSpace(out), err
}

// lookupAll resolves name in every client Pod and prints what each got.
func (d *demo) lookupAll(name string) (map[resolvers.Kind]resolvers.Result, error) {
	d.say("$ kubectl exec -n %s client-RESOLVER -- /lookup %s", clientNS, name)
	res := map[resolvers.Kind]resolvers.Result{}
	for _, k := range resolvers.Kinds {
		r, err := d.n.Lookup(d.ctx, clientNS, podOf(k), name)
		if err != nil {
			return nil, err
		}
		res[k] = r
		got := "lookup failed: " + r.Err
		if r.OK() {
			got = strings.Join(r.Addrs, ", ")
		}
		d.show(fmt.Sprintf("%-38s %s", kindLabel[k], got))
	}
	return res, nil
}

// expect checks that each of kinds got exactly addr, and the others failed.
func expect(res map[resolvers.Kind]resolvers.Result, kinds []resolvers.Kind, addr string) error {
	for _, k := range resolvers.Kinds {
		r := res[k]
		want := false
		for _, o := range kinds {
			want = want || o == k
		}
		switch {
		case want && (!r.OK() || strings.Join(r.Addrs, " ") != addr):
			return fmt.Errorf("expected %v to get %s, it got %v %s", k, addr, r.Addrs, r.Err)
		case !want && r.OK():
			return fmt.Errorf("expected %v to fail, it got %v", k, r.Addrs)
		}
	}
	return nil
}

func (d *demo) trap() error {
	d.header(`The trap: each Pod looks up "my-app"`)
	d.say("Each client Pod has the resolv.conf kubelet wrote for new-namespace-1:")
	d.show(fmt.Sprintf("search %s\nnameserver %s\noptions ndots:5", strings.Join(resolvers.PodSearch(clientNS), " "), node.DNSServiceIP))
	res, err := d.lookupAll("my-app")
	if err != nil {
		return err
	}
	if err := expect(res, []resolvers.Kind{resolvers.Glibc, resolvers.Go, resolvers.CAres}, coredns.CorpIP); err != nil {
		return err
	}
	app, err := d.appIP()
	if err != nil {
		return err
	}
	d.say("None reached %s, the Service my-app in new-namespace-2. With ndots:5 the resolver tries the search", app)
	d.say("list one name at a time; what kube-dns (%s) answers for each:", node.DNSServiceIP)
	for _, w := range []struct{ suffix, meaning string }{
		{"new-namespace-1.svc.cluster.local", "no Service my-app in new-namespace-1"},
		{"svc.cluster.local", "the namespace my-app: it exists, no error"},
		{"cluster.local", "not a cluster name"},
		{"corp.example", "the node's search domain: another host"},
	} {
		name := "my-app." + w.suffix
		m, err := resolvers.Query(d.ctx, node.DNSServiceIP.String()+":53", name, dns.TypeA)
		if err != nil {
			return err
		}
		d.show(fmt.Sprintf("%-42s %-21s %s", name, brief(m), w.meaning))
	}
	d.say(`musl stops at the first empty answer: the lookup fails, as on Alpine. glibc, Go and c-ares go on to
my-app.corp.example (%s): a wrong host, silently. And nothing in the cluster says so.`, coredns.CorpIP)
	return nil
}

func (d *demo) rollout() error {
	d.header("nsguard, rolled out as docs/rollout.md says")
	d.say("The image is built and imported (step 1 of the runbook); the events overlay is step 2 with step 3's Events:")
	if _, err := d.must("kubectl apply -k deploy/kubernetes-events 2>/dev/null | grep -v unchanged"); err != nil {
		return err
	}
	if _, err := d.must("kubectl -n kube-system rollout status deployment/coredns --timeout=3m"); err != nil {
		return err
	}
	if _, err := d.must("kubectl get pods -n kube-system -o wide"); err != nil {
		return err
	}
	return nil
}

func (d *demo) report() error {
	d.header("What nsguard reports: the log line, the Event, the offenders")
	d.say("In mode log nothing changes for clients. The Pods look up my-app again, until nsguard has named the musl Pod:")
	re := regexp.MustCompile(`answer through namespace "my-app": client=\S+ pod=new-namespace-1/client-musl `)
	var out string
	// Back to back: each try is already a kubectl exec and a kubectl logs.
	err := wait.PollUntilContextTimeout(d.ctx, 0, 45*time.Second, true, func(context.Context) (bool, error) {
		if _, err := d.n.Lookup(d.ctx, clientNS, podOf(resolvers.Musl), "my-app"); err != nil {
			return false, err
		}
		out, _ = d.n.Kubectl(d.ctx, "", "logs", "-n", "kube-system", "-l", "k8s-app=kube-dns", "--tail=-1")
		return re.MatchString(out), nil
	})
	switch {
	case wait.Interrupted(err) && d.ctx.Err() == nil:
		return fmt.Errorf("expected a log line naming pod new-namespace-1/client-musl:\n%s", out)
	case err != nil:
		return err
	}
	if _, err := d.lookupAll("my-app"); err != nil {
		return err
	}
	if _, err := d.must(`kubectl logs -n kube-system -l k8s-app=kube-dns --tail=-1 | grep 'plugin/nsguard: answer' | grep client-musl | head -2`); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(d.ctx, time.Second, 30*time.Second, true, func(context.Context) (bool, error) {
		out, _ = d.n.Kubectl(d.ctx, "", "get", "events", "-n", clientNS, "--field-selector", "reason=DNSNameThroughNamespace")
		return strings.Contains(out, "pod/client-musl"), nil
	}); err != nil {
		return fmt.Errorf("expected an Event on pod/client-musl:\n%s", out)
	}
	d.say("The team that owns the Pod sees it where it looks:")
	if _, err := d.must(`kubectl describe pod -n new-namespace-1 client-musl | sed -n '/^Events:/,$p' | grep -E 'Reason|DNSName'`); err != nil {
		return err
	}
	out, code, err := d.sh("kubectl logs -n kube-system -l k8s-app=kube-dns --prefix --timestamps --tail=-1 | kubectl nsguard offenders")
	if err != nil {
		return err
	}
	if code != 1 || !strings.Contains(out, clientNS+"/client-musl") {
		return fmt.Errorf("expected nsguard offenders to name %s/client-musl (exit status 1), got exit status %d", clientNS, code)
	}
	return nil
}

func (d *demo) refuse() error {
	d.header("mode refuse: the runbook's step 5")
	before, err := d.n.ConfigCounts(d.ctx, "k8s-app=kube-dns")
	if err != nil {
		return err
	}
	if _, err := d.must("kubectl apply -k deploy/kubernetes-refuse 2>/dev/null | grep -v unchanged"); err != nil {
		return err
	}
	d.say("No restart: kubelet updates the ConfigMap's volume, and the reload plugin picks the Corefile up...")
	took, err := d.n.WaitReloaded(d.ctx, "k8s-app=kube-dns", before, 3*time.Minute)
	if err != nil {
		return err
	}
	d.say("... on every CoreDNS Pod, %s after kubectl apply. The Pods look up my-app again:", took.Round(time.Second))
	res, err := d.lookupAll("my-app")
	if err != nil {
		return err
	}
	if err := expect(res, resolvers.Kinds, coredns.CorpIP); err != nil {
		return err
	}
	d.say(`NXDOMAIN sends every resolver on to its next search domain, musl included: none stops at the namespace
any more, as kubectl nsguard explain predicts for each:`)
	search := strings.Join(resolvers.PodSearch(clientNS), " ")
	if _, _, err := d.sh("kubectl nsguard explain my-app -n " + clientNS + " --mode refuse --search '" + search + "' | sed -n '/^RESOLVER/,$p'"); err != nil {
		return err
	}
	d.say("They reach my-app.corp.example at best, still not the Service in new-namespace-2: refusing cannot know")
	d.say("which Service was meant. The real fix is the one from the incident's blog post.")
	return nil
}

func (d *demo) fix() error {
	d.header("The fix: an ExternalName Service my-app in the client's namespace")
	if err := d.n.Apply(d.ctx, node.TheFix); err != nil {
		return err
	}
	d.show(node.TheFix)
	app, err := d.appIP()
	if err != nil {
		return err
	}
	res, err := d.lookupAll("my-app")
	if err != nil {
		return err
	}
	if err := expect(res, resolvers.Kinds, app); err != nil {
		return err
	}
	d.say("Every Pod reaches %s, the Service my-app in new-namespace-2: the first search candidate answers now.", app)
	_, err = d.must("kubectl get pods -A")
	return err
}

// brief renders an answer as dig's summary would: rcode, then the records.
func brief(m *dns.Msg) string {
	if m.Rcode != dns.RcodeSuccess {
		return dns.RcodeToString[m.Rcode]
	}
	if len(m.Answer) == 0 {
		return "NOERROR, no records"
	}
	var rrs []string
	for _, rr := range m.Answer {
		switch v := rr.(type) {
		case *dns.A:
			rrs = append(rrs, "A "+v.A.String())
		case *dns.CNAME:
			rrs = append(rrs, "CNAME "+v.Target)
		default:
			rrs = append(rrs, strings.Join(strings.Fields(rr.String()), " "))
		}
	}
	return strings.Join(rrs, ", ")
}
