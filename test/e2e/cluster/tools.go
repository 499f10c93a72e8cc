package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Tools are the binaries hack/build-tools.sh puts in the bin directory.
var Tools = []string{"etcd", "kube-apiserver", "kubectl", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy"}

// RepoRoot walks up from the working directory (a package directory under
// go test) to the directory holding hack/build-tools.sh.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "build-tools.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("hack/build-tools.sh not found above the working directory")
		}
		dir = parent
	}
}

// BuildTools runs hack/build-tools.sh (a no-op when cached; a cold build takes
// several minutes) and returns the bin directory after checking every tool.
func BuildTools(ctx context.Context) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "build-tools.sh"))
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	// On cancel kill the whole group, or go build would outlive us.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("hack/build-tools.sh: %w: a cold build takes minutes; run it first or raise go test -timeout", ctx.Err())
		}
		return "", fmt.Errorf("hack/build-tools.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	bin := lines[len(lines)-1]
	for _, t := range Tools {
		if st, err := os.Stat(filepath.Join(bin, t)); err != nil || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("tool %s missing from %s: %v", t, bin, err)
		}
	}
	return bin, nil
}

// FreshOutputDir empties, or makes, root/bin/name, where a benchmark writes what it ran.
func FreshOutputDir(root, name string) (string, error) {
	out := filepath.Join(root, "bin", name)
	if err := os.RemoveAll(out); err != nil {
		return "", err
	}
	return out, os.MkdirAll(out, 0o755)
}
