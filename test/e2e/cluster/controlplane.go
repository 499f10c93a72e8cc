package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nsguard/nsguard/test/e2e/loopback"
)

// ServiceCIDR is the apiserver's --service-cluster-ip-range.
const ServiceCIDR = "10.96.0.0/16"

// Grace periods before SIGKILL. etcd's data is throwaway, so it gets none.
const (
	apiserverGrace = 5 * time.Second
	etcdGrace      = 0
)

// ControlPlane is a running etcd and kube-apiserver on loopback.
type ControlPlane struct {
	Kubeconfig string // path of workDir/kubeconfig
	Server     string // https://ADDRESS:PORT, 127.0.0.1 unless Options.Address
	Token      string // bearer token of a system:masters user

	binDir, workDir   string
	host              string // Options.Address or 127.0.0.1
	etcdPort, apiPort int
	opts              Options
	clientset         kubernetes.Interface
	restConfig        *rest.Config

	mu                    sync.Mutex
	etcd, api             *process
	controllers, schedule *process // with Options.Controllers
	kcmArgs               []string // kube-controller-manager's, to start it again
	kcmPort               int
	stopped               bool
}

// Start starts etcd and kube-apiserver from binDir, with their state and logs
// (etcd.log, kube-apiserver.log) in workDir, and waits until /readyz is ok.
// On error nothing is left running. Stop must be called (see package doc).
func Start(ctx context.Context, binDir, workDir string) (*ControlPlane, error) {
	return StartWithOptions(ctx, binDir, workDir, Options{})
}

// StartWithOptions is Start with extra flags for etcd and kube-apiserver (see Options).
func StartWithOptions(ctx context.Context, binDir, workDir string, opts Options) (_ *ControlPlane, err error) {
	if binDir, err = filepath.Abs(binDir); err != nil {
		return nil, err
	}
	if workDir, err = filepath.Abs(workDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	ports, err := loopback.FreePorts(5)
	if err != nil {
		return nil, err
	}
	host := opts.Address
	if host == "" {
		host = "127.0.0.1"
	}
	cp := &ControlPlane{
		Kubeconfig: filepath.Join(workDir, "kubeconfig"),
		Server:     "https://" + net.JoinHostPort(host, strconv.Itoa(ports[2])),
		binDir:     binDir, workDir: workDir, host: host,
		etcdPort: ports[0], apiPort: ports[2],
		opts: opts,
	}
	if opts.AuditPolicy != "" {
		if err := os.WriteFile(filepath.Join(workDir, "audit-policy.yaml"), []byte(opts.AuditPolicy), 0o644); err != nil {
			return nil, err
		}
	}
	if cp.Token, err = writeSecrets(workDir); err != nil {
		return nil, err
	}
	if err := writeKubeconfig(cp.Kubeconfig, cp.Server, cp.Token); err != nil {
		return nil, err
	}
	cp.restConfig = restConfig(cp.Server, cp.Token)
	if cp.clientset, err = kubernetes.NewForConfig(cp.restConfig); err != nil {
		return nil, err
	}

	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	etcd, err := startEtcd(ctx, binDir, workDir, ports[0], ports[1], opts.EtcdArgs...)
	cp.mu.Lock()
	cp.etcd = etcd
	cp.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := cp.RestartAPIServer(ctx); err != nil {
		return nil, err
	}
	if opts.Controllers {
		if err := cp.startControllers(ctx, ports[3], ports[4]); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// Clientset returns a client authenticated as the admin user.
func (cp *ControlPlane) Clientset() kubernetes.Interface { return cp.clientset }

// RESTConfig returns a copy of the admin client configuration.
func (cp *ControlPlane) RESTConfig() *rest.Config { return rest.CopyConfig(cp.restConfig) }

// WorkDir is where the logs, keys and etcd data live.
func (cp *ControlPlane) WorkDir() string { return cp.workDir }

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after a grace
// period) and leaves etcd running. Safe to call when it is already stopped.
func (cp *ControlPlane) StopAPIServer() { cp.stopComponent(&cp.api) }

// stopComponent stops *p, if it runs, and forgets it.
func (cp *ControlPlane) stopComponent(p **process) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	(*p).stop(apiserverGrace)
	*p = nil
}

// RestartAPIServer starts kube-apiserver again on the same port and etcd,
// stopping it first if it is running, and waits for /readyz.
func (cp *ControlPlane) RestartAPIServer(ctx context.Context) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped {
		return fmt.Errorf("control plane already stopped")
	}
	cp.api.stop(apiserverGrace)
	cp.api = nil
	p, err := cp.startAPIServer(ctx)
	if err != nil {
		return err
	}
	cp.api = p
	return nil
}

// StopControllerManager stops kube-controller-manager, as a control plane of one member does
// when the API server is away longer than the leader lease (kube-controller-manager exits);
// StartControllerManager starts it again with the same flags once the API server is back, as
// its static Pod does. One that lives through the outage judges the node by the last
// heartbeat it saw before it, marks the node and every Pod on it NotReady the moment it can
// write again, and, its informers in client-go's back-off, keeps them so for up to a minute:
// every Service of the node loses its endpoints.
func (cp *ControlPlane) StopControllerManager() { cp.stopComponent(&cp.controllers) }

// StartControllerManager: see StopControllerManager.
func (cp *ControlPlane) StartControllerManager(ctx context.Context) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped || cp.controllers != nil {
		return fmt.Errorf("kube-controller-manager: control plane stopped, or already running")
	}
	p, err := cp.startComponent(ctx, "kube-controller-manager", cp.kcmPort, cp.kcmArgs)
	cp.controllers = p
	return err
}

// Stop stops kube-apiserver then etcd and reaps them. It is idempotent, safe
// on a nil or half-started ControlPlane, and safe from several goroutines.
func (cp *ControlPlane) Stop() {
	if cp == nil {
		return
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.stopped = true
	cp.schedule.stop(apiserverGrace)
	cp.controllers.stop(apiserverGrace)
	cp.api.stop(apiserverGrace)
	cp.etcd.stop(etcdGrace)
	cp.api, cp.etcd, cp.controllers, cp.schedule = nil, nil, nil, nil
}
