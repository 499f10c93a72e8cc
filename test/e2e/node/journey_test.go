//go:build e2e

package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

const clientNS = "new-namespace-1"

// central and nodeLocal name the client Pods of each path, by resolver.
func centralPod(k resolvers.Kind) string   { return "client-" + k.String() }
func nodeLocalPod(k resolvers.Kind) string { return "nodelocal-" + k.String() }

// journey is what the steps of TestNode share.
var journey journeyState

type journeyState struct {
	appIP       string // Service my-app in new-namespace-2
	centralLoad string // the load client's Pod through kube-dns
	nodeLoad    string // and through the node-local cache
	readyTimes  []string
	steps       []step // as they began
	// record tells where the central load client's queries went, from the rollout on.
	record    *dnsRecord
	centralIP string // the central load client's address
}

type step struct {
	name  string
	began time.Time
}

// stepAt is the step that was running at t.
func (j *journeyState) stepAt(t time.Time) string {
	name := ""
	for _, s := range j.steps {
		if !t.Before(s.began) {
			name = s.name
		}
	}
	return name
}

// TestNode runs a platform team's journey on the node, each step on what the last left.
func TestNode(t *testing.T) {
	steps := []struct {
		name string
		run  func(*testing.T)
	}{
		{"KubeadmCoreDNS", stepKubeadm},
		{"IncidentBeforeNSGuard", stepBefore},
		{"ReadinessFirst", stepReadinessFirst},
		{"RolloutModeLog", stepRollout},
		{"LogLineEventOffenders", stepReport},
		{"NodeLocal", stepNodeLocal},
		{"ModeRefuse", stepRefuse},
		{"IdentityThroughChurn", stepChurn},
		{"BackToModeLog", stepBack},
		{"NodeLocalChurn", stepNodeLocalChurn},
		{"TheFix", stepFix},
		{"Webhook", stepWebhook},
		{"APIServerAway", stepOutage},
		{"RollBackToStock", stepRollback},
		{"NothingLost", stepNothingLost},
		{"NothingLeftTheMachine", stepUplink},
	}
	defer func() {
		if journey.record != nil {
			journey.record.stop() // the conntrack process, whatever step failed
		}
	}()
	for _, s := range steps {
		journey.steps = append(journey.steps, step{s.name, time.Now()})
		if !t.Run(s.name, s.run) {
			t.Logf("--- kubectl get pods -A -o wide ---\n%s", kubectl(t, "get", "pods", "-A", "-o", "wide"))
			t.FailNow() // each step stands on the last
		}
	}
}

// CoreDNS as kubeadm installs it: its manifests with the cluster's DNS address (kubeadm
// computes it from the Service range: the 10th address), created, not applied.
func stepKubeadm(t *testing.T) {
	if err := env.node.InstallKubeadmCoreDNS(t.Context(), env.root, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	apply(t, Incident)
	svc, err := env.node.CP.Clientset().CoreV1().Services("new-namespace-2").Get(t.Context(), "my-app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	journey.appIP = svc.Spec.ClusterIP
	for _, k := range resolvers.Kinds {
		apply(t, clientPod(clientNS, centralPod(k), k, ""))
		apply(t, clientPod(clientNS, nodeLocalPod(k), k, NodeLocalIP.String()))
	}
	for _, k := range resolvers.Kinds {
		waitRunning(t, clientNS, centralPod(k), 2*time.Minute)
		waitRunning(t, clientNS, nodeLocalPod(k), 2*time.Minute)
	}
	must(t, "kubectl get pods -A -o wide")
	// The resolv.conf kubelet wrote for the Pods, as containerd mounts it.
	confs, _ := filepath.Glob(filepath.Join(varDir, "containerd", "io.containerd.grpc.v1.cri", "sandboxes", "*", "resolv.conf"))
	want := "search " + clientNS + ".svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver " + DNSServiceIP.String() + "\noptions ndots:5\n"
	found := false
	for _, c := range confs {
		if b, err := os.ReadFile(c); err == nil && string(b) == want {
			found = true
		}
	}
	if !found {
		t.Errorf("no Pod sandbox has kubelet's resolv.conf for %s:\n%s", clientNS, want)
	}
	t.Logf("kubelet's resolv.conf of the client Pods:\n%s", want)
}

// Before nsguard, each resolver does what the incident says, in real Pods whose resolv.conf
// kubelet wrote: musl stops at the namespace's empty answer, the others go on to the node's
// search domain, a different host.
func stepBefore(t *testing.T) {
	want := map[resolvers.Kind]string{resolvers.Glibc: coredns.CorpIP, resolvers.Musl: failed, resolvers.Go: coredns.CorpIP, resolvers.CAres: coredns.CorpIP}
	for _, k := range resolvers.Kinds {
		r := lookup(t, clientNS, centralPod(k), "my-app")
		t.Logf("before nsguard, %s in %s/%s looking up my-app got %s %s", k, clientNS, centralPod(k), show(r), r.Err)
		if show(r) != want[k] {
			t.Errorf("%s got %s, want %s", k, show(r), want[k])
		}
	}
}

// The runbook's step 2 begins on the CoreDNS the cluster runs: a readiness probe every second
// and a 15 s lameduck, so that the Pods the rollout stops leave kube-dns before they stop.
// This rollout stops kubeadm's Pods, which cannot (they exit while still serving): the
// runbook does it at a quiet hour, and so does the suite, before its load clients start.
func stepReadinessFirst(t *testing.T) {
	kubeadms := coreDNSPods(t)
	must(t, "kubectl -n kube-system get configmap coredns -o yaml | sed 's/lameduck 5s/lameduck 15s/' | kubectl replace -f -")
	must(t, "kubectl -n kube-system patch deployment coredns --patch-file "+repoPath("deploy/kubernetes/readiness-patch.yaml"))
	must(t, "kubectl -n kube-system rollout status deployment/coredns --timeout=5m")
	for _, p := range kubeadms { // rollout status is done before they have stopped
		waitGone(t, "kube-system", p.Name)
	}
	cm, err := env.node.CP.Clientset().CoreV1().ConfigMaps("kube-system").Get(t.Context(), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["Corefile"], "lameduck 15s") {
		t.Errorf("the Corefile has no lameduck 15s:\n%s", cm.Data["Corefile"])
	}
	pods := coreDNSPods(t)
	for _, p := range pods {
		if img := p.Spec.Containers[0].Image; img != StockCoreDNSImage {
			t.Errorf("pod %s runs %s, want kubeadm's %s still", p.Name, img, StockCoreDNSImage)
		}
		if pr := p.Spec.Containers[0].ReadinessProbe; pr == nil || pr.PeriodSeconds != 1 || pr.FailureThreshold != 2 {
			t.Errorf("pod %s has the readiness probe %+v, want every 1s, 2 failures", p.Name, pr)
		}
	}
	checkReadyTimes(t, pods)
}

// loadPod resolves two Service names 50 times a second, through kube-dns or, with
// nameserver, through that server.
func loadPod(name, nameserver string) string {
	dns := ""
	if nameserver != "" {
		dns = fmt.Sprintf(`
  dnsPolicy: "None"
  dnsConfig:
    nameservers: [%q]
    searches: [default.svc.cluster.local, svc.cluster.local, cluster.local, corp.example]
    options: [{name: ndots, value: "5"}]`, nameserver)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, labels: {app: nsguard-e2e-load}}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 65532}
  containers:
  - name: load
    image: %s
    imagePullPolicy: Never
    args: ["-rate", "50", "my-app.new-namespace-2", "kubernetes.default"]%s
`, name, LoadImage, dns)
}

// startLoad starts a load Pod and waits for its first second of answers.
func startLoad(t *testing.T, name, nameserver string) {
	t.Helper()
	apply(t, loadPod(name, nameserver))
	waitRunning(t, "default", name, 2*time.Minute)
	var out string
	if err := wait.PollUntilContextTimeout(t.Context(), time.Second, 30*time.Second, true, func(context.Context) (bool, error) {
		out, _ = sh(t, "kubectl logs -n default "+name)
		return regexp.MustCompile(`ok=[1-9]`).MatchString(out), nil
	}); err != nil {
		t.Fatalf("%s answered nothing in 30 s:\n%s", name, out)
	}
}

// The runbook's step 2, under load: the overlay rolls CoreDNS over to the nsguard image.
func stepRollout(t *testing.T) {
	journey.centralLoad = "load-central"
	journey.record = recordDNS(t, env.dir)
	startLoad(t, journey.centralLoad, "")
	journey.centralIP = waitRunning(t, "default", journey.centralLoad, time.Minute).Status.PodIP
	must(t, "kubectl kustomize "+repoPath("deploy/kubernetes")+" >/dev/null")
	must(t, "kubectl apply --dry-run=server -k "+repoPath("deploy/kubernetes"))
	must(t, "kubectl apply -k "+repoPath("deploy/kubernetes"))
	must(t, "kubectl -n kube-system rollout status deployment/coredns --timeout=5m")
	pods := coreDNSPods(t)
	for _, p := range pods {
		c := p.Spec.Containers[0]
		if c.Image != CoreDNSImage || p.Spec.SecurityContext.RunAsUser == nil || *p.Spec.SecurityContext.RunAsUser != 65532 {
			t.Errorf("pod %s runs %s as %v, want %s as 65532", p.Name, c.Image, p.Spec.SecurityContext.RunAsUser, CoreDNSImage)
		}
		if lim := c.Resources.Limits.Memory().String(); lim != "210Mi" {
			t.Errorf("pod %s has the memory limit %s, want the overlay's 210Mi", p.Name, lim)
		}
	}
	checkReadyTimes(t, pods)
}

func coreDNSPods(t *testing.T) []corev1.Pod {
	t.Helper()
	l, err := env.node.CP.Clientset().CoreV1().Pods("kube-system").List(t.Context(), metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// checkReadyTimes requires each Pod Ready within what its readiness probe allows: the
// initial delay, and the period times the failure threshold.
func checkReadyTimes(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		probe := p.Spec.Containers[0].ReadinessProbe
		if probe == nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Running == nil {
			t.Errorf("pod %s: no readiness probe or not running", p.Name)
			continue
		}
		// and a second more: the API server keeps both times to the second.
		allowed := time.Duration(probe.InitialDelaySeconds+probe.PeriodSeconds*probe.FailureThreshold+1) * time.Second
		started := p.Status.ContainerStatuses[0].State.Running.StartedAt.Time
		var ready time.Time
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = c.LastTransitionTime.Time
			}
		}
		took := ready.Sub(started)
		line := fmt.Sprintf("%s Ready %s after its container started (the probe allows %s)", p.Name, took, allowed)
		journey.readyTimes = append(journey.readyTimes, line)
		t.Log(line)
		if ready.IsZero() || took > allowed {
			t.Errorf("%s: not Ready within %s", p.Name, allowed)
		}
	}
}

// In mode log: the same answers, and the log names the real Pod; with the events overlay its
// Event shows where its team looks; nsguard offenders reads the runbook's kubectl logs.
func stepReport(t *testing.T) {
	stepBefore(t) // nothing changes for clients in mode log
	// Until kube-proxy drops them, the old Pods answer in their lame duck seconds: ask again.
	logs := waitLogAfter(t, `answer through namespace "my-app": client=[0-9.]+ pod=new-namespace-1/client-musl `, 30*time.Second,
		func() { lookup(t, clientNS, centralPod(resolvers.Musl), "my-app") })
	t.Logf("the log line:\n%s", logs)

	before := configCounts(t, "k8s-app=kube-dns")
	must(t, "kubectl apply --dry-run=server -k "+repoPath("deploy/kubernetes-events"))
	must(t, "kubectl apply -k "+repoPath("deploy/kubernetes-events"))
	took := waitReloaded(t, "k8s-app=kube-dns", before, 3*time.Minute)
	t.Logf("the events overlay's Corefile ran on every CoreDNS Pod %s after kubectl apply", took.Round(time.Second))
	if err := wait.PollUntilContextTimeout(t.Context(), 2*time.Second, time.Minute, true, func(context.Context) (bool, error) {
		lookup(t, clientNS, centralPod(resolvers.Musl), "my-app")
		out := must(t, "kubectl describe pod -n "+clientNS+" "+centralPod(resolvers.Musl)+" | sed -n '/^Events:/,$p'")
		return strings.Contains(out, "DNSNameThroughNamespace"), nil
	}); err != nil {
		t.Fatalf("no DNSNameThroughNamespace Event in kubectl describe pod after a minute")
	}
	must(t, "kubectl get events -A --field-selector reason=DNSNameThroughNamespace")

	out, code := sh(t, "kubectl logs -n kube-system -l k8s-app=kube-dns --prefix --timestamps --tail=-1 | kubectl nsguard offenders")
	t.Logf("$ kubectl logs -n kube-system -l k8s-app=kube-dns --prefix --timestamps | kubectl nsguard offenders (exit %d)\n%s", code, out)
	if code != 1 || !strings.Contains(out, clientNS+"/"+centralPod(resolvers.Musl)) {
		t.Errorf("nsguard offenders: want exit 1 and %s/%s named", clientNS, centralPod(resolvers.Musl))
	}
}

// waitLog waits for a line matching pattern in the CoreDNS logs and returns it.
func waitLog(t *testing.T, pattern string, timeout time.Duration) string {
	t.Helper()
	return waitLogAfter(t, pattern, timeout, func() {})
}

// waitLogAfter is waitLog that runs ask before each look at the logs.
func waitLogAfter(t *testing.T, pattern string, timeout time.Duration, ask func()) string {
	t.Helper()
	return waitLogIn(t, coreDNSLogs, pattern, timeout, ask)
}

// waitLogIn waits for a line of logs that matches pattern, running ask before each look.
func waitLogIn(t *testing.T, logs func(*testing.T) string, pattern string, timeout time.Duration, ask func()) string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	var out, line string
	if err := wait.PollUntilContextTimeout(t.Context(), time.Second, timeout, true, func(context.Context) (bool, error) {
		ask()
		out = logs(t)
		for _, line = range strings.Split(out, "\n") {
			if re.MatchString(line) {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("no log line matches %s after %s:\n%s", pattern, timeout, out)
	}
	return line
}
