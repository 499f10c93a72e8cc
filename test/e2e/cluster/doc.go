// Package cluster runs a real Kubernetes control plane (etcd + kube-apiserver
// built by hack/build-tools.sh) on loopback for the end-to-end suite, and
// creates the incident's fixtures in it. Without controllers by default; with
// Options.Controllers and Options.Address, kube-controller-manager and
// kube-scheduler too, on an address Pods reach, for the node (test/e2e/node),
// whose daemons join the same registry through StartDaemon.
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
