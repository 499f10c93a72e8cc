package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/loopback"
)

// Options say where the node's inputs are.
type Options struct {
	BinDir string // hack/build-tools.sh's bin directory
	Root   string // the repository
	Dir    string // configuration and logs of this run; the caller removes it
	// Logf reports progress; nil: quiet.
	Logf func(format string, args ...any)
}

// Node is a running single-node cluster.
type Node struct {
	CP       *cluster.ControlPlane
	IP       string // the node's InternalIP: the uplink's address
	Uplink   string // the uplink interface
	AuditLog string // kube-apiserver's audit log of Pod lists and watches

	opts                       Options
	mu                         sync.Mutex
	upstream                   *coredns.Server
	containerd, kubelet, proxy *cluster.Daemon
	hadLogDir                  bool // containerLogDir was there before the node
	stopped                    bool
}

// auditPolicy records who lists and watches Pods, and with which selectors (the request URI).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [list, watch]
  resources: [{group: "", resources: [pods]}]
- level: None
`

// RemoveLeftovers removes what a killed run of the node left on the host, as Start does
// first; after it, the host is as it was before that run. binDir gives kube-proxy --cleanup.
func RemoveLeftovers(binDir string) error {
	if err := claim(); err != nil {
		return err
	}
	return removeAll(binDir)
}

// Start removes what a killed run left, guards the network, then starts the upstream
// stand-in, containerd (and imports the images), the control plane with its controllers,
// kubelet and kube-proxy, and waits until the node is Ready and the default ServiceAccount
// exists. On error everything is removed again.
func Start(ctx context.Context, opts Options) (_ *Node, err error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	began := time.Now()
	logf := opts.Logf
	opts.Logf = func(format string, args ...any) {
		logf("%s (at %s)", fmt.Sprintf(format, args...), time.Since(began).Round(100*time.Millisecond))
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the node needs root: it changes the host's network, cgroups and mounts")
	}
	if err := RemoveLeftovers(opts.BinDir); err != nil {
		return nil, fmt.Errorf("removing a killed run's leftovers: %w", err)
	}
	if err := claim(); err != nil { // removeAll took runDir away
		return nil, err
	}
	n := &Node{opts: opts}
	if _, err := os.Stat(containerLogDir); err == nil {
		n.hadLogDir = true
	}
	defer func() {
		if err != nil {
			n.Stop()
		}
	}()
	if err := saveSysctls(); err != nil {
		return nil, err
	}
	up, err := findUplink()
	if err != nil {
		return nil, err
	}
	n.IP, n.Uplink = up.Addr.String(), up.Dev
	if err := guardNetwork(up); err != nil {
		return nil, fmt.Errorf("guarding the network: %w", err)
	}
	for _, d := range []string{opts.Dir, varDir, runDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := makeCgroupRoot(); err != nil {
		return nil, err
	}

	opts.Logf("containerd 1.6 (Debian), images")
	if n.containerd, err = startContainerd(ctx, opts.Dir); err != nil {
		return nil, err
	}
	// The images build while the control plane and kubelet start: no Pod runs before both.
	images := make(chan error, 1)
	var stock string
	go func() {
		var err error
		stock, err = buildImages(ctx, opts.Root, filepath.Join(opts.Dir, "images"))
		images <- err
	}()
	defer func() {
		if images != nil {
			<-images // never leave a build running behind Stop
		}
	}()
	up53 := UpstreamIP.String()
	// The node's resolv.conf: what kubelet gives Pods of dnsPolicy Default (CoreDNS) and
	// appends to every other Pod's search list.
	resolvConf := filepath.Join(opts.Dir, "node-resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("search corp.example\nnameserver "+up53+"\n"), 0o644); err != nil {
		return nil, err
	}

	opts.Logf("control plane on %s", n.IP)
	clientCA, clientCert, clientKey, err := kubeletClientCerts(opts.Dir)
	if err != nil {
		return nil, err
	}
	cp, err := cluster.StartWithOptions(ctx, opts.BinDir, filepath.Join(opts.Dir, "cluster"), cluster.Options{
		Address:     n.IP,
		Controllers: true,
		APIServerArgs: []string{
			"--service-cluster-ip-range=" + ServiceCIDR.String(),
			"--kubelet-client-certificate=" + clientCert,
			"--kubelet-client-key=" + clientKey,
			"--kubelet-preferred-address-types=InternalIP", // not the node's name, which no DNS knows
		},
		AuditPolicy:    auditPolicy,
		ControllerArgs: []string{"--cluster-cidr=" + PodCIDR.String(), "--service-cluster-ip-range=" + ServiceCIDR.String()},
	})
	n.mu.Lock()
	n.CP = cp
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	n.AuditLog = cp.AuditLog()

	opts.Logf("kubelet and kube-proxy")
	ports, err := loopback.FreePorts(4)
	if err != nil {
		return nil, err
	}
	kubeletConf := filepath.Join(opts.Dir, "kubelet.yaml")
	if err := os.WriteFile(kubeletConf, []byte(kubeletConfig(n.IP, ports[0], ports[1], clientCA, resolvConf)), 0o644); err != nil {
		return nil, err
	}
	if n.kubelet, err = startKubelet(opts.BinDir, opts.Dir, cp.Kubeconfig, kubeletConf, n.IP); err != nil {
		return nil, err
	}
	proxyConf := filepath.Join(opts.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(proxyConf, []byte(kubeProxyConfig(cp.Kubeconfig, ports[2], ports[3])), 0o644); err != nil {
		return nil, err
	}
	if n.proxy, err = startKubeProxy(opts.BinDir, opts.Dir, proxyConf); err != nil {
		return nil, err
	}
	err = <-images
	images = nil
	if err != nil {
		return nil, err
	}
	opts.Logf("images built and imported")
	// The company's DNS, the node's resolver: CoreDNS as released, serving the stand-in zones.
	zones := filepath.Join(opts.Dir, "upstream")
	if err := os.MkdirAll(zones, 0o755); err != nil {
		return nil, err
	}
	if err := coredns.WriteUpstreamZones(zones); err != nil {
		return nil, err
	}
	if n.upstream, err = coredns.Start(ctx, stock, zones, up53, coredns.UpstreamCorefile(up53, zones), "", "corp.example"); err != nil {
		return nil, fmt.Errorf("the upstream stand-in: %w", err)
	}
	if err := n.waitReady(ctx, 2*time.Minute); err != nil {
		return nil, err
	}
	opts.Logf("node %s Ready", NodeName)
	return n, nil
}

// waitReady waits for the node's Ready condition and for the default ServiceAccount, which
// the controller manager creates and every Pod needs.
func (n *Node) waitReady(ctx context.Context, timeout time.Duration) error {
	cs := n.CP.Clientset()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := n.daemonsAlive(); err != nil {
			return false, err
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		switch {
		case err != nil:
			last = err.Error()
		case !nodeReady(node):
			last = fmt.Sprintf("node %s not Ready: %v", NodeName, node.Status.Conditions)
		default:
			_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			if err == nil {
				return true, nil
			}
			if !apierrors.IsNotFound(err) {
				last = err.Error()
			} else {
				last = "no ServiceAccount default/default yet"
			}
		}
		return false, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("node not ready after %s: %s\n--- kubelet.log ---\n%s", timeout, last, tailFile(filepath.Join(n.opts.Dir, "kubelet.log"), 40))
	}
	return err
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// daemonsAlive is an error naming the first of the node's daemons that has exited.
func (n *Node) daemonsAlive() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name, d := range map[string]*cluster.Daemon{"containerd": n.containerd, "kubelet": n.kubelet, "kube-proxy": n.proxy} {
		if d == nil {
			continue
		}
		if done, err := d.Exited(); done {
			return fmt.Errorf("%s exited: %v\n--- %s.log ---\n%s", name, err, name, tailFile(filepath.Join(n.opts.Dir, name+".log"), 40))
		}
	}
	return nil
}

// Healthy is an error if a daemon of the node has exited.
func (n *Node) Healthy() error { return n.daemonsAlive() }

// UplinkPackets is how many packets to the Pod or Service range reached the uplink: dropped
// on the way out when forwarded, sent when the host's own. Both must be 0.
func (n *Node) UplinkPackets() (forwarded, own uint64, err error) { return uplinkPackets() }

// Log is the path of a daemon's log: containerd, kubelet, kube-proxy, or under cluster/ the
// control plane's.
func (n *Node) Log(name string) string {
	switch name {
	case "containerd", "kubelet", "kube-proxy":
		return filepath.Join(n.opts.Dir, name+".log")
	}
	return filepath.Join(n.opts.Dir, "cluster", name+".log")
}

// Stop stops kubelet and kube-proxy, kills the containers and their shims, stops containerd
// and the control plane, and removes everything the node added to the host. Safe to call
// more than once.
func (n *Node) Stop() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopped {
		return nil
	}
	n.stopped = true
	n.kubelet.Stop(5 * time.Second)
	n.proxy.Stop(5 * time.Second)
	killContainers()
	n.containerd.Stop(5 * time.Second)
	n.CP.Stop()
	if n.upstream != nil {
		_ = n.upstream.Stop()
	}
	err := removeAll(n.opts.BinDir)
	if !n.hadLogDir {
		_ = os.Remove(containerLogDir) // only if empty
	}
	return err
}

// containerLogDir is where kubelet links every container's log, whatever its configuration.
const containerLogDir = "/var/log/containers"

// removeContainerLogLinks removes kubelet's links to the node's Pod logs.
func removeContainerLogLinks() {
	entries, _ := os.ReadDir(containerLogDir)
	for _, e := range entries {
		p := filepath.Join(containerLogDir, e.Name())
		if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, varDir+"/") {
			_ = os.Remove(p)
		}
	}
}
