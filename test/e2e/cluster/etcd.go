package cluster

import (
	"context"
	"fmt"
	"path/filepath"
)

// startEtcd starts a single-member etcd on loopback and waits for /health.
func startEtcd(ctx context.Context, binDir, workDir string, clientPort, peerPort int, extra ...string) (*process, error) {
	client := fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	logPath := filepath.Join(workDir, "etcd.log")
	args := []string{
		"--name=e2e",
		"--data-dir=" + filepath.Join(workDir, "etcd-data"),
		"--unsafe-no-fsync", // throwaway data; fsync only slows tests down
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=e2e=" + peer,
	}
	p, err := startProcess("etcd", filepath.Join(binDir, "etcd"), logPath, append(args, extra...)...)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, p, client+"/health", "", `"health":"true"`, 0); err != nil {
		p.stop(0)
		return nil, fmt.Errorf("%w\n--- tail of %s ---\n%s", err, logPath, tail(logPath, 30))
	}
	return p, nil
}
