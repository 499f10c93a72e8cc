package coredns

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// Build compiles cmd/coredns of the repository at root into outDir and returns the binary's path.
func Build(ctx context.Context, root, outDir string) (string, error) {
	bin := filepath.Join(outDir, "coredns")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/coredns")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building cmd/coredns: %v\n%s", err, out)
	}
	return bin, nil
}
