package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/corefiles"
)

// The stock workload: the Corefile kubeadm shipped until v1.32, which clusters upgraded since
// still run, as a pod runs it (in-cluster configuration, CoreDNS's own service account). Its
// cache 30 answers cluster.local too, so nearly every answer of the mix comes from the cache,
// which runs after nsguard: a cached answer still crosses nsguard's held path.
const stockCorefile = "kubeadm-pre-v1.32"

// stockConfigs are the stock Corefile as shipped, with any added, and with nsguard added
// in each mode; a bare nsguard in a pod has its cluster view. The control is the floor's
// Corefile again, run as every other configuration is (warmed, then beside the floor): its
// ratio to the floor is what the method alone reads, where the true figure is 1.
var stockConfigs = []config{
	{name: "stock Corefile alone", ip: "127.53.11.1"},
	{name: "any (the floor)", ip: "127.53.11.2", stock: "any"},
	{name: "nsguard, mode log", ip: "127.53.11.3", stock: "nsguard"},
	{name: "nsguard, mode refuse", ip: "127.53.11.4", stock: "nsguard {\n    mode refuse\n}", refusesApex: true},
	{name: "any again (the control)", ip: "127.53.11.5", stock: "any"},
}

// stockUpstreamIP is the upstream stand-in that "forward . /etc/resolv.conf" reaches.
const stockUpstreamIP = "127.53.11.9"

// clientPod is a Pod whose address dnsperf sends from, so that nsguard names it, and keys
// its log limits on it, as it does for a pod in a cluster.
type clientPod struct{ namespace, name, ip string }

// stockClients are n Pods, each in a namespace of its own, on loopback addresses of their own.
func stockClients(n int) []clientPod {
	var out []clientPod
	for k := range n {
		out = append(out, clientPod{fmt.Sprintf("team-%d", k+1), "client", fmt.Sprintf("127.53.20.%d", k+1)})
	}
	return out
}

// createClients makes the client Pods real: Running, with their addresses.
func createClients(ctx context.Context, cp *cluster.ControlPlane, pods []clientPod) error {
	for _, p := range pods {
		if err := cluster.CreateRunningPod(ctx, cp.Clientset(), p.namespace, p.name, p.ip); err != nil {
			return err
		}
	}
	return nil
}

// stockEnv is the pod environment the stock servers run in, and their upstream stand-in.
func stockEnv(ctx context.Context, root, bin, out, zones string, cp *cluster.ControlPlane) (coredns.PodEnv, *coredns.Server, error) {
	token, err := cluster.CoreDNSToken(ctx, cp.Clientset(), root)
	if err != nil {
		return coredns.PodEnv{}, nil, err
	}
	ca, err := cp.ServingCA()
	if err != nil {
		return coredns.PodEnv{}, nil, err
	}
	env := coredns.PodEnv{Token: token, CA: ca, Namespace: cluster.CoreDNSNamespace, APIServerPort: cp.APIServerPort(),
		ResolvConf: filepath.Join(out, "node-resolv.conf")}
	if err := os.WriteFile(env.ResolvConf, []byte("nameserver "+stockUpstreamIP+"\n"), 0o644); err != nil {
		return coredns.PodEnv{}, nil, err
	}
	dir := filepath.Join(out, stockUpstreamIP)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return coredns.PodEnv{}, nil, err
	}
	up, err := coredns.Start(ctx, bin, dir, stockUpstreamIP, coredns.UpstreamCorefile(stockUpstreamIP, zones), "", "corp.example.")
	return env, up, err
}

// startStock runs the stock Corefile with c's lines and a pprof listener added, as in a pod,
// and returns once it is ready, nsguard's view synced included.
func startStock(ctx context.Context, root, bin, out string, env coredns.PodEnv, c config) (*coredns.Server, error) {
	src, err := os.ReadFile(filepath.Join(root, "test", "e2e", "testdata", "corefiles", stockCorefile+".Corefile"))
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(out, c.ip)
	if err := corefiles.PrepareConfigDir(dir); err != nil {
		return nil, err
	}
	ports, err := coredns.FreeTCPAddrs(4)
	if err != nil {
		return nil, err
	}
	a := corefiles.Addrs{Listen: []string{c.ip}, Metrics: ports[0], Health: ports[1], Ready: ports[2], ConfigDir: dir}
	added := strings.TrimSuffix("pprof "+ports[3]+"\n"+c.stock, "\n")
	text, err := corefiles.Render(string(src), a, added)
	if err != nil {
		return nil, err
	}
	s, err := coredns.StartInPod(ctx, bin, dir, coredns.InPod{IPs: a.Listen, Corefile: text, Metrics: a.Metrics,
		Ready: a.Ready, Probe: "startup-probe.cluster.local.", Env: env})
	if err != nil {
		return nil, err
	}
	pprofAddrs[s] = ports[3]
	return s, nil
}
