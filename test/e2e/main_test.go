//go:build e2e

// Package e2e runs the incident end to end: a real kube-apiserver and etcd, the CoreDNS
// of cmd/coredns, and the glibc, musl, Go and c-ares resolvers looking names up as a pod in
// namespace new-namespace-1 would.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/podnet"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// clientPodIP is the client Pod's address: loopback queries leave from 127.0.0.1.
const clientPodIP = "127.0.0.1"

// env is what every scenario shares; each scenario runs its own CoreDNS.
var env struct {
	cp      *cluster.ControlPlane
	binDir  string // kube-apiserver, etcd, kubectl
	coredns string // binary
	clients *resolvers.Clients
	zoneDir string
}

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "nsguard-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		defer cluster.KillAll()
		defer podnet.CloseAll() // after the servers: they bind addresses it owns
		defer coredns.StopAll()
		if err := setUp(dir); err != nil {
			fmt.Fprintf(os.Stderr, "e2e set-up failed: %v\n", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

func setUp(dir string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the suite needs root: it binds port 53 and mounts a pod's /etc/resolv.conf in a private mount namespace")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // a cold tools build takes minutes
	defer cancel()
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	binDir, err := cluster.BuildTools(ctx)
	if err != nil {
		return err
	}
	env.binDir = binDir
	if env.coredns, err = coredns.Build(ctx, root, dir); err != nil {
		return err
	}
	if env.clients, err = resolvers.Build(ctx, filepath.Join(dir, "clients")); err != nil {
		return err
	}
	env.zoneDir = filepath.Join(dir, "zones")
	if err := os.MkdirAll(env.zoneDir, 0o755); err != nil {
		return err
	}
	if err := coredns.WriteUpstreamZones(env.zoneDir); err != nil {
		return err
	}
	if env.cp, err = cluster.Start(ctx, binDir, filepath.Join(dir, "cluster")); err != nil {
		return err
	}
	return cluster.ApplyIncident(ctx, env.cp.Clientset(), clientPodIP)
}
