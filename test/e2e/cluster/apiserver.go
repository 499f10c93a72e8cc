package cluster

import (
	"context"
	"fmt"
	"path/filepath"
)

// apiserverArgs are the flags of a controller-less apiserver on loopback.
func (cp *ControlPlane) apiserverArgs() []string {
	d := cp.workDir
	args := []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", cp.etcdPort),
		"--bind-address=" + cp.host,
		"--advertise-address=" + cp.host,
		fmt.Sprintf("--secure-port=%d", cp.apiPort),
		"--cert-dir=" + filepath.Join(d, "certs"), // self-signed serving cert
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + filepath.Join(d, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(d, "sa.key"),
		"--token-auth-file=" + filepath.Join(d, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--enable-priority-and-fairness=false",
	}
	if !cp.opts.Controllers {
		args = append(args,
			"--endpoint-reconciler-type=none",            // a loopback advertise address is refused otherwise
			"--disable-admission-plugins=ServiceAccount", // no controller creates default ServiceAccounts
		)
	}
	if cp.opts.AuditPolicy != "" {
		args = append(args,
			"--audit-policy-file="+filepath.Join(d, "audit-policy.yaml"),
			"--audit-log-path="+cp.AuditLog(),
			"--audit-log-format=json",
			"--audit-log-mode=blocking",
			"--audit-log-maxsize=1000000", // MB
			"--audit-log-maxbackup=0",
		)
	}
	return append(args, cp.opts.APIServerArgs...) // later flags win
}

// AuditLog is kube-apiserver's audit log, with Options.AuditPolicy.
func (cp *ControlPlane) AuditLog() string { return filepath.Join(cp.workDir, "audit.log") }

// startAPIServer starts kube-apiserver and waits for /readyz.
func (cp *ControlPlane) startAPIServer(ctx context.Context) (*process, error) {
	logPath := filepath.Join(cp.workDir, "kube-apiserver.log")
	p, err := startProcess("kube-apiserver", filepath.Join(cp.binDir, "kube-apiserver"), logPath, cp.apiserverArgs()...)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, p, cp.Server+"/readyz", cp.Token, "ok", cp.opts.ReadyTimeout); err != nil {
		p.stop(0)
		return nil, fmt.Errorf("%w\n--- tail of %s ---\n%s", err, logPath, tail(logPath, 40))
	}
	return p, nil
}
