package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nsguard/nsguard/test/e2e/cluster"
)

// kubeletConfig is the KubeletConfiguration of the node; each setting off kubelet's defaults
// is one this machine needs.
func kubeletConfig(addr string, port, healthz int, clientCA, resolvConf string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 here: kubelet refuses it unless told (KEP-5573). No systemd: cgroupfs, under a
# cgroup root of the node's own, which removing the node takes away whole.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %s
# This machine refuses a negative oom_score_adj, even to root.
oomScoreAdj: 0
failSwapOn: false
enforceNodeAllocatable: []
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
# The images are imported, not pulled: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
containerRuntimeEndpoint: unix://%s
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
clusterDomain: cluster.local
clusterDNS: [%s]
resolvConf: %s
podLogsDir: %s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization:
  mode: Webhook
serializeImagePulls: false
# A ConfigMap's change reaches a Pod's volume at the Pod's next sync; every 10 s instead of a
# minute, so that the runbook's Corefile switches show within seconds.
syncFrequency: 10s
`, cgroupRoot, containerdSock, addr, port, healthz, DNSServiceIP, resolvConf,
		filepath.Join(varDir, "pod-logs"), clientCA)
}

// makeCgroupRoot creates kubelet's cgroup root in every v1 hierarchy; a new cpuset cgroup
// starts with no CPUs and memory nodes, so it gets its parent's.
func makeCgroupRoot() error {
	dirs, err := filepath.Glob("/sys/fs/cgroup/*")
	if err != nil {
		return err
	}
	for _, h := range dirs {
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(h, "cgroup.controllers")); err == nil {
			continue // the empty cgroup2 of a hybrid host
		}
		d := filepath.Join(h, cgroupRoot)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(d, f), []byte(strings.TrimSpace(string(v))), 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func startKubelet(binDir, dir, kubeconfig, config, nodeIP string) (*cluster.Daemon, error) {
	return cluster.StartDaemon("kubelet", filepath.Join(binDir, "kubelet"), filepath.Join(dir, "kubelet.log"),
		"--config="+config,
		"--kubeconfig="+kubeconfig,
		"--root-dir="+filepath.Join(varDir, "kubelet"),
		"--cert-dir="+filepath.Join(varDir, "kubelet", "pki"),
		"--hostname-override="+NodeName,
		"--node-ip="+nodeIP,
		"--v=2",
	)
}

// kubeProxyConfig runs kube-proxy in iptables mode, leaving the host's conntrack sysctls and
// route_localnet alone (localhostNodePorts off: no NodePort is reached through 127.0.0.1).
func kubeProxyConfig(kubeconfig string, metrics, healthz int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
mode: iptables
clusterCIDR: %s
metricsBindAddress: 127.0.0.1:%d
healthzBindAddress: 127.0.0.1:%d
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
iptables:
  localhostNodePorts: false
  minSyncPeriod: 1s
  syncPeriod: 30s
`, kubeconfig, NodeName, PodCIDR, metrics, healthz)
}

func startKubeProxy(binDir, dir, config string) (*cluster.Daemon, error) {
	return cluster.StartDaemon("kube-proxy", filepath.Join(binDir, "kube-proxy"), filepath.Join(dir, "kube-proxy.log"),
		"--config="+config, "--v=2")
}
