package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// Kubectl runs the built kubectl against this control plane and returns its
// combined output. The discovery cache stays in the work dir, not in $HOME.
func (cp *ControlPlane) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	base := []string{"--kubeconfig=" + cp.Kubeconfig, "--cache-dir=" + filepath.Join(cp.workDir, "kubectl-cache")}
	cmd := exec.CommandContext(ctx, filepath.Join(cp.binDir, "kubectl"), append(base, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
	}
	return out, nil
}

// KubectlPath is the built kubectl, for tests that run it as a user would (a plugin on the PATH).
func (cp *ControlPlane) KubectlPath() string { return filepath.Join(cp.binDir, "kubectl") }
