package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/cluster"
)

// PauseImage is the sandbox image: built here (images.go), never pulled.
const PauseImage = "localhost/nsguard-e2e/pause:1"

// containerdConfig is containerd 1.6's configuration for the node. Its state lives in the
// node's directories; restrict_oom_score_adj because this machine refuses a negative
// oom_score_adj even to root, and kubelet asks -998 for every sandbox; network namespaces
// are mounted under the state directory, so that removing the node finds them.
func containerdConfig(cniConf string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
oom_score = 0
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %q
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
    max_conf_num = 1
`, filepath.Join(varDir, "containerd"), filepath.Join(runDir, "containerd"), containerdSock,
		PauseImage, filepath.Join(runDir, "runc"), cniConf)
}

// cniConfig is the Pod network: the bridge plugin, host-local addresses from PodSubnet
// (state kept under the node's directory), no masquerade: nothing is meant to leave.
func cniConfig() string {
	gw := PodSubnet.Addr().Next()
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "nsguard-node",
  "plugins": [{
    "type": "bridge",
    "bridge": %q,
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "ranges": [[{"subnet": %q, "gateway": %q}]],
      "routes": [{"dst": "0.0.0.0/0"}],
      "dataDir": %q
    }
  }]
}
`, bridge, PodSubnet.String(), gw.String(), filepath.Join(varDir, "cni", "ipam"))
}

// startContainerd writes the configuration and starts containerd, and waits for its socket.
func startContainerd(ctx context.Context, dir string) (*cluster.Daemon, error) {
	cniConf := filepath.Join(varDir, "cni", "net.d")
	if err := os.MkdirAll(cniConf, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cniConf, "10-nsguard-node.conflist"), []byte(cniConfig()), 0o644); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "containerd.toml")
	if err := os.WriteFile(conf, []byte(containerdConfig(cniConf)), 0o644); err != nil {
		return nil, err
	}
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return nil, fmt.Errorf("containerd not found: apt-get install containerd (hack/deps.sh): %w", err)
	}
	logPath := filepath.Join(dir, "containerd.log")
	d, err := cluster.StartDaemon("containerd", bin, logPath, "--config", conf)
	if err != nil {
		return nil, err
	}
	var exited bool
	var exitErr error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if out, err := ctr(ctx, "version"); err == nil && strings.Contains(out, "Server:") {
			return true, nil
		}
		exited, exitErr = d.Exited()
		return exited, nil // an exited containerd ends the wait too
	})
	if err != nil || exited {
		d.Stop(0)
		return nil, fmt.Errorf("containerd not up (exited: %v, %v):\n%s", exited, exitErr, tailFile(logPath, 30))
	}
	return d, nil
}

// ctr runs containerd's own client against the node's containerd, in Kubernetes' namespace.
func ctr(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", containerdSock, "--namespace", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// tailFile is the last n lines of a log, for an error message.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
