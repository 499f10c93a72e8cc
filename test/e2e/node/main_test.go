//go:build e2e

package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// env is the node every test of this package shares, and the tools a user has beside it.
var env struct {
	node *Node
	root string
	dir  string // this run's, removed at the end
	bin  string // kubectl, and kubectl-nsguard: the PATH of a user's shell
	// before is the host before the node started
	before host
}

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "nsguard-node-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			// NSGUARD_NODE_KEEP=1 keeps the run's directory: every daemon's log and the
			// conntrack record of the load client's queries, to read after a failure.
			if os.Getenv("NSGUARD_NODE_KEEP") != "" {
				fmt.Fprintf(os.Stderr, "node: the run's directory is kept: %s\n", dir)
				return
			}
			os.RemoveAll(dir)
		}()
		defer cluster.KillAll()
		defer coredns.StopAll()
		if err := setUp(dir); err != nil {
			fmt.Fprintf(os.Stderr, "node set-up failed: %v\n", err)
			if env.node != nil {
				env.node.Stop()
			}
			return 1
		}
		code := m.Run()
		if err := env.node.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the node: %v\n", err)
			code = 1
		}
		// Everything the node added to the host is gone.
		after, err := snapshotHost()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if diff := env.before.diff(after); diff != "" {
			fmt.Fprintf(os.Stderr, "FAIL: the node left this on the host:\n%s\n", diff)
			code = 1
		}
		return code
	}()
	os.Exit(code)
}

func setUp(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute) // a cold tools build takes long
	defer cancel()
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	env.root, env.dir = root, dir
	binDir, err := cluster.BuildTools(ctx)
	if err != nil {
		return err
	}
	env.bin = filepath.Join(dir, "path")
	if err := os.MkdirAll(env.bin, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join(binDir, "kubectl"), filepath.Join(env.bin, "kubectl")); err != nil {
		return err
	}
	// The operator CLI as the kubectl plugin: kubectl nsguard runs kubectl-nsguard from the PATH.
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(env.bin, "kubectl-nsguard"), "./cmd/nsguard")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/nsguard: %v\n%s", err, out)
	}
	// The host as it is without the node: a killed run's leftovers go first.
	if err := RemoveLeftovers(binDir); err != nil {
		return err
	}
	if env.before, err = snapshotHost(); err != nil {
		return err
	}
	env.node, err = Start(ctx, Options{BinDir: binDir, Root: root, Dir: filepath.Join(dir, "node"),
		Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "node: "+f+"\n", a...) }})
	return err
}

// sh runs a command line as a user would in a shell with kubectl and kubectl-nsguard on the
// PATH and the node's kubeconfig, and returns its output and exit status.
func sh(t *testing.T, line string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", "-o", "pipefail", "-c", line)
	cmd.Env = append(os.Environ(), "PATH="+env.bin+":"+os.Getenv("PATH"), "KUBECONFIG="+env.node.CP.Kubeconfig,
		"KUBECACHEDIR="+filepath.Join(env.bin, ".kube-cache"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return out.String(), code
}

// must runs line and fails the test unless it exits 0.
func must(t *testing.T, line string) string {
	t.Helper()
	out, code := sh(t, line)
	if code != 0 {
		t.Fatalf("$ %s\nexit status %d:\n%s", line, code, out)
	}
	t.Logf("$ %s\n%s", line, strings.TrimRight(out, "\n"))
	return out
}
