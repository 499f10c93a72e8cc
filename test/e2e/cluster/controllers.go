package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
)

// startControllers starts kube-controller-manager and kube-scheduler on loopback ports of
// their own, with the admin kubeconfig, and waits for each one's /healthz. Neither runs a
// leader election, so that neither exits on its own when the API server is away; a test
// that takes it away starts kube-controller-manager again, as its static Pod would be
// (StopControllerManager).
func (cp *ControlPlane) startControllers(ctx context.Context, kcmPort, schedPort int) error {
	d := cp.workDir
	kcm := append([]string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(kcmPort),
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file=" + filepath.Join(d, "sa.key"),
		// What Pods trust as ca.crt, in the kube-root-ca.crt ConfigMap of every namespace.
		"--root-ca-file=" + filepath.Join(d, "certs", "apiserver.crt"),
	}, cp.opts.ControllerArgs...)
	sched := append([]string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(schedPort),
		"--leader-elect=false",
	}, cp.opts.SchedulerArgs...)
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var err error
	cp.kcmArgs, cp.kcmPort = kcm, kcmPort
	if cp.controllers, err = cp.startComponent(ctx, "kube-controller-manager", kcmPort, kcm); err != nil {
		return err
	}
	cp.schedule, err = cp.startComponent(ctx, "kube-scheduler", schedPort, sched)
	return err
}

func (cp *ControlPlane) startComponent(ctx context.Context, name string, port int, args []string) (*process, error) {
	logPath := filepath.Join(cp.workDir, name+".log")
	p, err := startProcess(name, filepath.Join(cp.binDir, name), logPath, args...)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, p, fmt.Sprintf("https://127.0.0.1:%d/healthz", port), "", "ok", 0); err != nil {
		p.stop(0)
		return nil, fmt.Errorf("%w\n--- tail of %s ---\n%s", err, logPath, tail(logPath, 40))
	}
	return p, nil
}
