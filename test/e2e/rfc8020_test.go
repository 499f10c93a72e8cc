//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/corefiles"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// What a refusal claims. nsguard's NXDOMAIN for my-app.svc.cluster.local says, by RFC 8020,
// that nothing exists below it; a cache that applies RFC 8020 would then hide every Service of
// namespace my-app from every client behind it. TestRefusalThroughCaches puts each cache that
// can sit between Pods and cluster DNS in front of a real CoreDNS running kubeadm's Corefile
// with nsguard in mode refuse, and asks through it for the namespace apex, then for Service
// svc-a in that namespace.

// The addresses of this test: loopback ones, so it changes nothing on the host's network.
const (
	rfcUpstreamIP   = "127.53.44.2"  // the upstream stand-in, for kubeadm's forward . /etc/resolv.conf
	rfcClusterDNSIP = "127.53.44.10" // cluster DNS: kubeadm's Corefile, nsguard in mode refuse
	rfcService      = "svc-a"        // a Service in cluster.LegacyNamespace, made for this test
)

// negativeCache is one cache between the Pods and cluster DNS, and what we claim about it.
type negativeCache struct {
	name string
	ip   string
	// hides: a Service below a refused namespace apex answers NXDOMAIN through this cache
	// while the refusal is cached. hidesCold: it does so through a fresh cache, where no client
	// asked the apex, because the cache asks cluster DNS the apex itself on the way (QNAME
	// minimisation) and takes nsguard's refusal for the answer. The README and docs/caches.md
	// say which caches do.
	hides, hidesCold bool
	start            func(t *testing.T, c negativeCache)
}

// unboundZone is how Unbound reaches cluster DNS. forward-zone sends each question as it is
// (recursion desired) to a resolver; stub-zone treats cluster DNS as the zone's authoritative
// server and minimises the question (RFC 9156), asking my-app.svc.cluster.local on the way to
// svc-a.my-app.svc.cluster.local.
func unbound(zone string, settings ...string) func(*testing.T, negativeCache) {
	return func(t *testing.T, c negativeCache) {
		dir := t.TempDir()
		addr := "forward-addr"
		if zone == "stub-zone" {
			addr = "stub-addr"
		}
		conf := fmt.Sprintf(`server:
    interface: %s
    port: 53
    do-ip6: no
    do-daemonize: no
    username: ""
    chroot: ""
    directory: "%s"
    pidfile: "%s/unbound.pid"
    use-syslog: no
    logfile: ""
    verbosity: 1
    access-control: 127.0.0.0/8 allow
    # cluster DNS sits on a loopback address here; in a cluster it is the kube-dns Service.
    do-not-query-localhost: no
    # cluster.local is not signed: a validating Unbound needs it insecure, or every answer is bogus.
    module-config: "iterator"
    domain-insecure: "cluster.local"
    %s
%s:
    name: "cluster.local"
    %s: %s
`, c.ip, dir, dir, strings.Join(settings, "\n    "), zone, addr, rfcClusterDNSIP)
		path := filepath.Join(dir, "unbound.conf")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(tool(t, "unbound-checkconf", "unbound"), path).CombinedOutput(); err != nil {
			t.Fatalf("unbound-checkconf: %v\n%s", err, out)
		}
		runCache(t, c, tool(t, "unbound", "unbound"), "-d", "-c", path)
	}
}

// dnsmasq as a node-level cache: cluster.local to cluster DNS, its default cache, nothing else.
func dnsmasq(t *testing.T, c negativeCache) {
	runCache(t, c, tool(t, "dnsmasq", "dnsmasq-base"),
		"--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
		"--bind-interfaces", "--listen-address="+c.ip, "--port=53", "--pid-file=",
		"--server=/cluster.local/"+rfcClusterDNSIP, "--log-queries", "--log-facility=-")
}

// nodeLocalDNS is CoreDNS's cache as NodeLocal DNSCache runs it: its Corefile, with
// cluster.local forwarded to cluster DNS over TCP.
func nodeLocalDNS(t *testing.T, c negativeCache) {
	src, err := os.ReadFile(filepath.Join("testdata", "corefiles", "nodelocaldns.Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	ports, err := coredns.FreeTCPAddrs(2)
	if err != nil {
		t.Fatal(err)
	}
	text, err := corefiles.Render(string(src), corefiles.Addrs{Listen: []string{c.ip}, Metrics: ports[0], Health: ports[1],
		ClusterDNS: rfcClusterDNSIP, Upstream: rfcUpstreamIP}, "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := coredns.Start(t.Context(), env.coredns, t.TempDir(), c.ip, text, ports[0], startupProbe)
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, srv, c.name)
}

// tool is the path of a Debian package's program; hack/deps.sh installs them.
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	t.Fatalf("%s not found: apt-get install %s (make deps)", name, pkg)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// runCache runs a cache program in the foreground until the test ends, and waits until it
// answers through cluster DNS.
func runCache(t *testing.T, c negativeCache, bin string, args ...string) {
	t.Helper()
	if err := coredns.CheckPortFree(c.ip); err != nil {
		t.Fatal(err)
	}
	// The program writes its log to a file, read back when it matters.
	logFile, err := os.Create(filepath.Join(t.TempDir(), c.name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the program has its own descriptor
	logs := func() string {
		b, _ := os.ReadFile(logFile.Name())
		return string(b)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("--- %s log ---\n%s", c.name, logs())
		}
	})
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		select {
		case <-done:
			t.Fatalf("%s exited at start:\n%s", c.name, logs())
		default:
		}
		res, err := resolvers.Query(t.Context(), c.ip+":53", "cluster.local.", dns.TypeSOA)
		return err == nil && res.Rcode == dns.RcodeSuccess, nil
	}); err != nil {
		t.Fatalf("%s did not answer cluster.local SOA on %s:53 within 15s:\n%s", c.name, c.ip, logs())
	}
}

func TestRefusalThroughCaches(t *testing.T) {
	ctx := t.Context()
	cs := env.cp.Clientset()

	// Service svc-a in namespace my-app, removed when the test ends (after the servers stop).
	svc, err := cs.CoreV1().Services(cluster.LegacyNamespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: rfcService, Namespace: cluster.LegacyNamespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: cluster.AppPortName, Port: cluster.AppPort, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Services(cluster.LegacyNamespace).Delete(context.Background(), rfcService, metav1.DeleteOptions{}); err != nil {
			t.Errorf("removing %s/%s: %v", cluster.LegacyNamespace, rfcService, err)
		}
	})
	svcIP := svc.Spec.ClusterIP
	apex := cluster.LegacyNamespace + ".svc.cluster.local."
	below := rfcService + "." + apex

	central := startRefusingClusterDNS(t)
	refused := func() float64 {
		return coredns.SumBy(scrape(t, central), apexMetric, "action")["refused"]
	}
	// Asked directly, cluster DNS refuses the apex and answers the Service.
	if res := askAt(t, rfcClusterDNSIP, apex); !isNXDomain(res) {
		t.Fatalf("cluster DNS answered %s for %s, want nsguard's NXDOMAIN:\n%v", dns.RcodeToString[res.Rcode], apex, res)
	}
	if got := addrs(askAt(t, rfcClusterDNSIP, below)); got != svcIP {
		t.Fatalf("cluster DNS answered %s with %q, want %s", below, got, svcIP)
	}

	caches := []negativeCache{
		{name: "coredns-cache-nodelocaldns", ip: "127.53.44.20", start: nodeLocalDNS},
		{name: "dnsmasq", ip: "127.53.44.30", start: dnsmasq},
		{name: "unbound-forward-harden-below-nxdomain-yes", ip: "127.53.44.40",
			start: unbound("forward-zone", "harden-below-nxdomain: yes")},
		{name: "unbound-forward-harden-below-nxdomain-no", ip: "127.53.44.41",
			start: unbound("forward-zone", "harden-below-nxdomain: no")},
		{name: "unbound-stub-harden-below-nxdomain-yes", ip: "127.53.44.42",
			start: unbound("stub-zone", "harden-below-nxdomain: yes")},
		{name: "unbound-stub-qname-minimisation-strict", ip: "127.53.44.43", hidesCold: true,
			start: unbound("stub-zone", "harden-below-nxdomain: yes", "qname-minimisation-strict: yes")},
	}
	for _, c := range caches {
		t.Run(c.name, func(t *testing.T) {
			t.Run("after-refusal", func(t *testing.T) {
				c.start(t, c)
				before := refused()
				// 1. A Pod's search list reaches the namespace apex: nsguard refuses it, the
				// cache keeps the NXDOMAIN (5 s, the refusal's SOA).
				if res := askAt(t, c.ip, apex); res.Rcode != dns.RcodeNameError {
					t.Fatalf("%s answered %s for %s, want the refusal's NXDOMAIN:\n%v", c.name, dns.RcodeToString[res.Rcode], apex, res)
				}
				if refused() <= before {
					t.Fatalf("nsguard refused nothing while %s asked %s", c.name, apex)
				}
				// 2. While that NXDOMAIN is cached, another Pod asks for a Service below it.
				res := askAt(t, c.ip, below)
				// 3. The apex again, from the cache: nsguard is not asked. So the refusal was
				// cached all through step 2.
				held := refused()
				if res := askAt(t, c.ip, apex); res.Rcode != dns.RcodeNameError {
					t.Fatalf("%s answered %s for %s the second time", c.name, dns.RcodeToString[res.Rcode], apex)
				}
				if now := refused(); now != held {
					t.Fatalf("%s did not keep the refusal: nsguard refused %s again (%v -> %v)", c.name, apex, held, now)
				}
				checkHidden(t, c.name+", after the refusal of "+apex+",", res, below, svcIP, c.hides)
			})
			t.Run("cold", func(t *testing.T) {
				c.start(t, c)
				checkHidden(t, c.name+", fresh,", askAt(t, c.ip, below), below, svcIP, c.hidesCold)
			})
		})
	}
}

// checkHidden fails unless res, the answer for name, is ip (want hidden false) or NXDOMAIN
// (hidden true), and logs what it was.
func checkHidden(t *testing.T, through string, res *dns.Msg, name, ip string, hidden bool) {
	t.Helper()
	got := addrs(res)
	switch {
	case !hidden && got != ip:
		t.Errorf("%s hides %s: got %s %q, want %s", through, name, dns.RcodeToString[res.Rcode], got, ip)
	case hidden && res.Rcode != dns.RcodeNameError:
		t.Errorf("%s was expected to hide %s (NXDOMAIN), and answered %s %q", through, name, dns.RcodeToString[res.Rcode], got)
	}
	t.Logf("%s %s: %s %q", through, name, dns.RcodeToString[res.Rcode], got)
}

// startRefusingClusterDNS runs kubeadm's Corefile with nsguard in mode refuse, as in a pod, on
// rfcClusterDNSIP, and the upstream stand-in its forward reaches; both stop when the test ends.
func startRefusingClusterDNS(t *testing.T) *coredns.Server {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	pe := podEnv(t, dir)
	if err := os.WriteFile(pe.ResolvConf, []byte("nameserver "+rfcUpstreamIP+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	updir := filepath.Join(dir, "upstream")
	if err := os.MkdirAll(updir, 0o755); err != nil {
		t.Fatal(err)
	}
	up, err := coredns.Start(ctx, env.coredns, updir, rfcUpstreamIP, coredns.UpstreamCorefile(rfcUpstreamIP, env.zoneDir), "", "corp.example.")
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, up, "upstream stand-in")
	src, err := os.ReadFile(filepath.Join("testdata", "corefiles", "kubeadm.Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	ports, err := coredns.FreeTCPAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	a := corefiles.Addrs{Listen: []string{rfcClusterDNSIP}, Metrics: ports[0], Health: ports[1], Ready: ports[2], ConfigDir: dir}
	text, err := corefiles.Render(string(src), a, guardRefuse)
	if err != nil {
		t.Fatal(err)
	}
	srvDir := filepath.Join(dir, "coredns")
	if err := os.MkdirAll(srvDir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, err := coredns.StartInPod(ctx, env.coredns, srvDir, coredns.InPod{IPs: a.Listen, Corefile: text,
		Metrics: a.Metrics, Ready: a.Ready, Probe: startupProbe, Env: pe})
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, srv, "cluster DNS")
	return srv
}

// stopAtEnd stops srv when the test ends, and shows its log if the test failed.
func stopAtEnd(t *testing.T, srv *coredns.Server, what string) {
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("%s, after stop: %v", what, err)
		}
		if t.Failed() {
			t.Logf("--- %s log ---\n%s", what, srv.Log())
		}
	})
}

// askAt sends one A question to ip:53.
func askAt(t *testing.T, ip, name string) *dns.Msg {
	t.Helper()
	res, err := resolvers.Query(t.Context(), ip+":53", name, dns.TypeA)
	if err != nil {
		t.Fatalf("asking %s for %s: %v", ip, name, err)
	}
	return res
}

// addrs are the A records of an answer, space-separated.
func addrs(m *dns.Msg) string {
	var out []string
	for _, rr := range m.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return strings.Join(out, " ")
}
