// Package cluster runs a real, controller-less Kubernetes control plane
// (etcd + kube-apiserver built by hack/build-tools.sh) on loopback for the
// end-to-end suite, and creates the incident's fixtures in it.
//
// Teardown: every started ControlPlane is registered; Stop, Run (for
// TestMain), StartT (t.Cleanup) and a SIGINT/SIGTERM handler all stop it.
// Children also get SIGKILL through Pdeathsig if the test binary dies.
//
//	func TestMain(m *testing.M) { cluster.Run(m) }
//
//	func TestX(t *testing.T) {
//		cp := cluster.StartT(t, binDir) // stopped by t.Cleanup
//		...
//	}
package cluster
