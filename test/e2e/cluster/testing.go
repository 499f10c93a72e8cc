package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

// Run is for TestMain: it runs the tests, kills any child still alive (say a
// control plane shared by the tests, or one a test never stopped), and exits.
// A panicking test skips this; Pdeathsig then kills the children.
//
//	func TestMain(m *testing.M) { cluster.Run(m) }
func Run(m *testing.M) {
	code := m.Run()
	KillAll()
	os.Exit(code)
}

// StartT starts a control plane for one test in t.TempDir(), and stops it in
// t.Cleanup; on failure the tail of the apiserver log is logged.
func StartT(t testing.TB, binDir string) *ControlPlane {
	t.Helper()
	dir := t.TempDir()
	cp, err := Start(t.Context(), binDir, dir)
	if err != nil {
		t.Fatalf("start control plane: %v", err)
	}
	t.Cleanup(func() {
		cp.Stop()
		if t.Failed() {
			t.Logf("--- tail of kube-apiserver.log ---\n%s", tail(filepath.Join(dir, "kube-apiserver.log"), 40))
		}
	})
	return cp
}
