//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/corefiles"
	"github.com/nsguard/nsguard/test/e2e/podnet"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// The stock Corefiles (testdata/corefiles), each run as in a pod: client-go's in-cluster
// configuration with CoreDNS's own service account and RBAC, forward . /etc/resolv.conf to an
// upstream stand-in, and client pods that ask from addresses of their own.

// distro is a stock Corefile and the way a cluster runs it.
type distro struct {
	name      string // testdata/corefiles/<name>.Corefile
	nodeLocal bool   // NodeLocal DNSCache, in front of a central CoreDNS running kubeadm's Corefile
}

var distros = []distro{
	{name: "kubeadm"}, {name: "kubeadm-pre-v1.32"}, {name: "coredns-helm"}, {name: "k3s-rendered"},
	{name: "rke2-coredns"}, {name: "coredns-deployment"}, {name: "eks"}, {name: "aks"},
	{name: "nodelocaldns", nodeLocal: true},
}

// The suite's addresses: servers on the host's lo, pods behind their veths.
const (
	upstreamIP      = "10.53.0.2"     // the upstream stand-in (corp.example, example.net, NXDOMAIN else)
	clusterDNSIP    = "10.53.0.10"    // what the pods' resolv.conf names: the CoreDNS under test
	twinIP          = "10.53.0.11"    // the same Corefile without nsguard, to compare answers with
	centralIP       = "10.53.0.20"    // NodeLocal DNSCache's __PILLAR__CLUSTER__DNS__
	nodeLocalIP     = "169.254.20.10" // NodeLocal DNSCache's __PILLAR__LOCAL__DNS__
	nodeLocalTwinIP = "169.254.20.11" // the twin node-local cache, on one address
	podnetPrefix    = "nsg"
)

// The nsguard lines under test.
const (
	guardLog    = "nsguard"
	guardRefuse = "nsguard {\n    mode refuse\n    allow client kube-system\n}"
)

// client is a pod with its own network namespace and the resolv.conf kubelet gives it.
type client struct {
	pod        *podnet.Pod
	resolvConf string
}

// stack is what the stock Corefile tests share: the pods' network, the clients, the upstream
// stand-in and CoreDNS's pod environment. Servers under test come and go on top of it.
type stack struct {
	dir              string
	web, probe, shop *client
	env              coredns.PodEnv
}

var (
	stockFixturesOnce sync.Once
	stockFixturesErr  error
)

// newStack builds the network, pods, upstream and service account for one test, and tears
// them down in t.Cleanup, whatever the test's outcome.
func newStack(t *testing.T) *stack {
	t.Helper()
	ctx := t.Context()
	cs := env.cp.Clientset()
	stockFixturesOnce.Do(func() {
		for _, apply := range []func() error{
			func() error { return cluster.ApplyClientPods(ctx, cs) },
			func() error { return cluster.ApplyStatefulSet(ctx, cs) },
			func() error { return cluster.ApplyTenants(ctx, cs) },
		} {
			if stockFixturesErr = apply(); stockFixturesErr != nil {
				return
			}
		}
	})
	if stockFixturesErr != nil {
		t.Fatalf("fixtures: %v", stockFixturesErr)
	}
	s := &stack{dir: t.TempDir()}
	s.env = podEnv(t, s.dir)
	// dnsPolicy Default: CoreDNS gets the node's resolv.conf, whose nameserver is the upstream.
	if err := os.WriteFile(s.env.ResolvConf, []byte("nameserver "+upstreamIP+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	network, err := podnet.New(podnetPrefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := network.Close(); err != nil {
			t.Errorf("tearing the pod network down: %v", err)
		}
	})
	for _, ip := range []string{upstreamIP, clusterDNSIP, twinIP, centralIP, nodeLocalIP, nodeLocalTwinIP} {
		if err := network.AddServiceAddr(ip); err != nil {
			t.Fatal(err)
		}
	}
	addClient := func(ns, name, ip string) *client {
		p, err := network.AddPod(ns+"/"+name, ip)
		if err != nil {
			t.Fatal(err)
		}
		rc := filepath.Join(s.dir, ns+"-"+name+".resolv.conf")
		if err := resolvers.PodResolvConf(rc, clusterDNSIP, ns); err != nil {
			t.Fatal(err)
		}
		return &client{pod: p, resolvConf: rc}
	}
	s.web = addClient(cluster.ClientNamespace, cluster.WebPod, cluster.WebPodIP)
	s.probe = addClient(cluster.ProbeNamespace, cluster.ProbePod, cluster.ProbePodIP)
	s.shop = addClient(cluster.ShopNamespace, cluster.ShopClientPod, cluster.ShopClientPodIP)

	updir := filepath.Join(s.dir, "upstream")
	if err := os.MkdirAll(updir, 0o755); err != nil {
		t.Fatal(err)
	}
	up, err := coredns.Start(ctx, env.coredns, updir, upstreamIP, coredns.UpstreamCorefile(upstreamIP, env.zoneDir), "", "corp.example.")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := up.Stop(); err != nil {
			t.Errorf("upstream stand-in: %v", err)
		}
	})
	// NodeLocal DNSCache's cluster DNS: kubeadm's Corefile, without nsguard.
	s.start(t, distro{name: "kubeadm"}, []string{centralIP}, "")
	return s
}

// listen is where d's server under test binds, and what the pods' resolv.conf names.
func (d distro) listen() []string {
	if d.nodeLocal {
		return []string{nodeLocalIP, clusterDNSIP} // the link-local address and kube-dns's
	}
	return []string{clusterDNSIP}
}

// twinListen is where the same Corefile without nsguard binds, beside it.
func (d distro) twinListen() []string {
	if d.nodeLocal {
		return []string{nodeLocalTwinIP}
	}
	return []string{twinIP}
}

// start runs d's Corefile with nsguard (empty for none) in it, as in a pod, bound to listen,
// and stops it when the test ends (at once: lameduck would only make us wait). It returns once
// the server answers and is ready, nsguard's cluster view included.
func (s *stack) start(t *testing.T, d distro, listen []string, nsguard string) *coredns.Server {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "corefiles", d.name+".Corefile"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := corefiles.PrepareConfigDir(dir); err != nil {
		t.Fatal(err)
	}
	ports, err := coredns.FreeTCPAddrs(3)
	if err != nil {
		t.Fatal(err)
	}
	a := corefiles.Addrs{Listen: listen, Metrics: ports[0], Health: ports[1], Ready: ports[2], ConfigDir: dir,
		ClusterDNS: centralIP, Upstream: upstreamIP}
	text, err := corefiles.Render(string(src), a, nsguard)
	if err != nil {
		t.Fatal(err)
	}
	p := coredns.InPod{IPs: listen, Corefile: text, Metrics: a.Metrics, Probe: startupProbe, Env: s.env}
	if !d.nodeLocal {
		p.Ready = a.Ready // NodeLocal DNSCache's Corefile has no ready plugin
	}
	srv, err := coredns.StartInPod(t.Context(), env.coredns, dir, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("after stop: %v", err)
		}
		if t.Failed() {
			t.Logf("--- log of %s on %s with %q ---\n%s", d.name, listen[0], nsguard, srv.Log())
		}
	})
	if d.nodeLocal && nsguard != "" {
		if err := srv.WaitViewSynced(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return srv
}

// startupProbe is the name asked to see a server up: one no test asks, so that its cached
// answer (with the SOA serial of start-up) never stands in for one a test compares.
const startupProbe = "startup-probe.cluster.local."

// podEnv is what CoreDNS sees in a pod: its service account's token (its roles as shipped),
// the API server's CA and address, and a node resolv.conf in dir for the test to write.
func podEnv(t *testing.T, dir string) coredns.PodEnv {
	t.Helper()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	token, err := cluster.CoreDNSToken(t.Context(), env.cp.Clientset(), root)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := env.cp.ServingCA()
	if err != nil {
		t.Fatal(err)
	}
	return coredns.PodEnv{Token: token, CA: ca, Namespace: cluster.CoreDNSNamespace,
		APIServerPort: env.cp.APIServerPort(), ResolvConf: filepath.Join(dir, "node-resolv.conf")}
}
