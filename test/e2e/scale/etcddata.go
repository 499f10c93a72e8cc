package scale

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Creating the full-size cluster takes most of a run; its etcd data can be kept and reused.
// The size it holds is written beside it, so that data of another size is refused.

const sizeFile = "size.txt"

// SaveEtcdData moves the etcd data of a stopped control plane in dir to keep.
func SaveEtcdData(dir, keep string, size Size) error {
	if err := os.RemoveAll(keep); err != nil {
		return err
	}
	if err := os.MkdirAll(keep, 0o755); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, "etcd-data"), filepath.Join(keep, "etcd-data")); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(keep, sizeFile), []byte(size.String()+"\n"), 0o644)
}

// CopyEtcdData copies the etcd data kept in keep into dir, where StartControlPlane finds it.
func CopyEtcdData(keep, dir string, size Size) error {
	b, err := os.ReadFile(filepath.Join(keep, sizeFile))
	if err != nil {
		return fmt.Errorf("-reuse-etcd %s: %w (keep one with -save-etcd)", keep, err)
	}
	if got := strings.TrimSpace(string(b)); got != size.String() {
		return fmt.Errorf("-reuse-etcd %s holds %s, not %s", keep, got, size)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out, err := exec.Command("cp", "-a", filepath.Join(keep, "etcd-data"), filepath.Join(dir, "etcd-data")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("copying %s: %v: %s", keep, err, out)
	}
	return nil
}
