package cluster

import (
	"context"
	"time"
)

// Options are extra flags for a control plane, after the suite's own: a later flag wins.
type Options struct {
	EtcdArgs      []string // e.g. --quota-backend-bytes for a cluster of thousands of Pods
	APIServerArgs []string // kept across RestartAPIServer
	// AuditPolicy, an audit.k8s.io/v1 Policy, has kube-apiserver log what it selects to
	// AuditLog(), as JSON, written before each response and never rotated, so that a count
	// right after a request holds it and byte offsets stay good across restarts.
	AuditPolicy string
	// ReadyTimeout bounds the wait for the API server's /readyz at each start; 0: 60 s. Over
	// tens of thousands of Pods its informers take longer to sync than that on 2 cores.
	ReadyTimeout time.Duration
	// Address is where kube-apiserver listens and what it advertises; empty: 127.0.0.1. Pods
	// reach it through the kubernetes Service, so a node needs an address they can route to.
	Address string
	// Controllers also runs kube-controller-manager and kube-scheduler (ControllerArgs and
	// SchedulerArgs after the suite's flags), and leaves the ServiceAccount admission plugin
	// on: the controller manager makes the default ServiceAccounts and publishes kube-root-ca.crt.
	Controllers                   bool
	ControllerArgs, SchedulerArgs []string
}

// APIServerMetrics returns kube-apiserver's /metrics page, read as the admin.
func (cp *ControlPlane) APIServerMetrics(ctx context.Context) (string, error) {
	b, err := cp.clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	return string(b), err
}
