package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// What a user does on the node with kubectl, for the suite and the demo.

// Incident is the incident's objects, as a user would apply them: the API server allocates
// the addresses.
const Incident = `apiVersion: v1
kind: Namespace
metadata: {name: my-app}
---
apiVersion: v1
kind: Namespace
metadata: {name: new-namespace-1}
---
apiVersion: v1
kind: Namespace
metadata: {name: new-namespace-2}
---
apiVersion: v1
kind: Namespace
metadata: {name: legacy-a}
---
apiVersion: v1
kind: Service
metadata: {name: my-app, namespace: new-namespace-2}
spec: {selector: {app: my-app}, ports: [{name: https, port: 443}]}
---
apiVersion: v1
kind: Service
metadata: {name: other-app-1, namespace: legacy-a}
spec: {selector: {app: other-app-1}, ports: [{name: https, port: 443}]}
---
apiVersion: v1
kind: Service
metadata: {name: other-app-2, namespace: legacy-a}
spec: {selector: {app: other-app-2}, ports: [{name: https, port: 443}]}
---
apiVersion: v1
kind: Service
metadata: {name: other-app-1, namespace: my-app}
spec: {type: ExternalName, externalName: other-app-1.legacy-a.svc.cluster.local}
---
apiVersion: v1
kind: Service
metadata: {name: other-app-2, namespace: my-app}
spec: {type: ExternalName, externalName: other-app-2.legacy-a.svc.cluster.local}
`

// TheFix is the incident's fix: an ExternalName Service my-app in the client's namespace.
const TheFix = `apiVersion: v1
kind: Service
metadata: {name: my-app, namespace: new-namespace-1}
spec: {type: ExternalName, externalName: my-app.new-namespace-2.svc.cluster.local}
`

// ClientPod is a resolver's Pod: /pause at rest, /lookup on kubectl exec. With nameserver it
// is pointed at that server as kubelet's clusterDNS would point it (dnsPolicy None, the same
// search list); without, it gets kubelet's resolv.conf for the cluster's DNS.
func ClientPod(ns, name string, kind resolvers.Kind, nameserver string) string {
	dns := ""
	if nameserver != "" {
		dns = fmt.Sprintf(`
  dnsPolicy: "None"
  dnsConfig:
    nameservers: [%q]
    searches: [%s.svc.cluster.local, svc.cluster.local, cluster.local, corp.example]
    options: [{name: ndots, value: "5"}]`, nameserver, ns)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {app: nsguard-e2e-client}}
spec:
  terminationGracePeriodSeconds: 5
  securityContext: {runAsNonRoot: true, runAsUser: 65532}
  containers:
  - name: client
    image: %s
    imagePullPolicy: Never%s
`, name, ns, ClientImage(kind), dns)
}

// Kubectl runs the built kubectl on the node with stdin, and returns its combined output.
func (n *Node) Kubectl(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, n.CP.KubectlPath(), append([]string{"--kubeconfig=" + n.CP.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Apply applies YAML with kubectl.
func (n *Node) Apply(ctx context.Context, yaml string) error {
	_, err := n.Kubectl(ctx, yaml, "apply", "-f", "-")
	return err
}

// InstallKubeadmCoreDNS creates CoreDNS as kubeadm does: its manifests (deploy/kubernetes/base
// of root) with the cluster's DNS address, which kubeadm computes from the Service range,
// created, not applied; and waits for the rollout.
func (n *Node) InstallKubeadmCoreDNS(ctx context.Context, root, dir string) error {
	rel, err := filepath.Rel(dir, filepath.Join(root, "deploy", "kubernetes", "base")) // kustomize takes no absolute base
	if err != nil {
		return err
	}
	kust := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [%s]
patches:
- target: {kind: Service, name: kube-dns}
  patch: |
    - op: add
      path: /spec/clusterIP
      value: %s
`, rel, DNSServiceIP)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		return err
	}
	if _, err := n.Kubectl(ctx, "", "create", "-k", dir); err != nil {
		return err
	}
	_, err = n.Kubectl(ctx, "", "-n", "kube-system", "rollout", "status", "deployment/coredns", "--timeout=3m")
	return err
}

// WaitRunning waits until the Pod runs, is Ready and has an address.
func (n *Node) WaitRunning(ctx context.Context, ns, name string, timeout time.Duration) (*corev1.Pod, error) {
	var p *corev1.Pod
	var err error
	if wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err = n.CP.Clientset().CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && (p.Status.PodIP != "" || p.Spec.HostNetwork) && PodReady(p), nil
	}) != nil {
		desc, _ := n.Kubectl(context.WithoutCancel(ctx), "", "describe", "pod", "-n", ns, name)
		return nil, fmt.Errorf("pod %s/%s not running after %s: %v\n%s", ns, name, timeout, err, desc)
	}
	return p, nil
}

// PodReady reports the Pod's Ready condition.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Lookup resolves name in a client Pod with kubectl exec, as its application would.
func (n *Node) Lookup(ctx context.Context, ns, pod, name string) (resolvers.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.CP.KubectlPath(), "--kubeconfig="+n.CP.Kubeconfig, "exec", "-n", ns, pod, "--", "/lookup", name)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return resolvers.Result{}, fmt.Errorf("kubectl exec %s/%s: %v", ns, pod, err)
	}
	res, err := resolvers.ParseOutput(stdout.String(), code)
	if err != nil {
		return res, fmt.Errorf("kubectl exec -n %s %s -- /lookup %s: %v\n%s", ns, pod, name, err, stderr.String())
	}
	return res, nil
}

var runningConfig = regexp.MustCompile(`Running configuration SHA512 = [0-9a-f]+`)

// ConfigCounts counts, per running Pod of selector in kube-system, the configurations its
// CoreDNS has run (the reload plugin logs each).
func (n *Node) ConfigCounts(ctx context.Context, selector string) (map[string]int, error) {
	pods, err := n.CP.Clientset().CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		out, err := n.Kubectl(ctx, "", "logs", "-n", "kube-system", p.Name)
		if err != nil {
			return nil, err
		}
		counts[p.Name] = len(runningConfig.FindAllString(out, -1))
	}
	return counts, nil
}

// WaitReloaded waits until every Pod in before has run one more configuration: the reload
// plugin picked the ConfigMap's new Corefile up, once kubelet updated the volume.
func (n *Node) WaitReloaded(ctx context.Context, selector string, before map[string]int, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	var now map[string]int
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(context.Context) (bool, error) {
		var err error
		if now, err = n.ConfigCounts(ctx, selector); err != nil {
			return false, err
		}
		done := len(before) > 0
		for p, c := range before {
			if now[p] <= c {
				done = false
			}
		}
		return done, nil
	})
	switch {
	case wait.Interrupted(err) && ctx.Err() == nil:
		return 0, fmt.Errorf("CoreDNS Pods %v did not reload within %s (configurations run: before %v, now %v)", selector, timeout, before, now)
	case err != nil:
		return 0, err
	}
	return time.Since(start), nil
}
