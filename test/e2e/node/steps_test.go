//go:build e2e

package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
	"github.com/nsguard/nsguard/test/e2e/scale"
)

// The node-local cache, deployed as NodeLocal DNSCache is, on this node's link-local address;
// its nsguard names the real Pods that ask it, and watches only this node's Pods.
func stepNodeLocal(t *testing.T) {
	dir := t.TempDir()
	kust := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [%s]
patches:
- target: {kind: DaemonSet, name: node-local-dns}
  patch: |
    - op: replace
      path: /spec/template/spec/containers/0/env/0/value
      value: %s
    - op: replace
      path: /spec/template/spec/containers/0/livenessProbe/httpGet/host
      value: %s
`, relTo(t, dir, "deploy/kubernetes-nodelocal"), NodeLocalIP, NodeLocalIP)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, "kubectl apply --dry-run=server -k "+repoPath("deploy/kubernetes-nodelocal"))
	must(t, "kubectl apply -k "+dir)
	must(t, "kubectl -n kube-system rollout status daemonset/node-local-dns --timeout=3m")
	// Its upstream, kube-dns-upstream, is a Service made in the same apply: until kube-proxy
	// has its endpoints, the cache's forward is refused and clients get SERVFAIL.
	var m *dns.Msg
	var err error
	if wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		m, err = resolvers.Query(t.Context(), NodeLocalIP.String()+":53", "kubernetes.default.svc.cluster.local.", dns.TypeA)
		return err == nil && m.Rcode == dns.RcodeSuccess && len(m.Answer) > 0, nil
	}) != nil {
		t.Fatalf("the node-local cache does not answer kubernetes.default.svc.cluster.local after a minute: %v %v", m, err)
	}
	time.Sleep(5 * time.Second) // the SERVFAILs of that moment leave the cache

	// The same answers as through kube-dns: the cache forwards cluster.local to it.
	want := map[resolvers.Kind]string{resolvers.Glibc: coredns.CorpIP, resolvers.Musl: failed, resolvers.Go: coredns.CorpIP, resolvers.CAres: coredns.CorpIP}
	for _, k := range resolvers.Kinds {
		r := lookup(t, clientNS, nodeLocalPod(k), "my-app")
		t.Logf("through the node-local cache, %s in %s/%s looking up my-app got %s %s", k, clientNS, nodeLocalPod(k), show(r), r.Err)
		if show(r) != want[k] {
			t.Errorf("%s got %s, want %s", k, show(r), want[k])
		}
	}
	line := waitNodeLocalLog(t, `answer through namespace "my-app": client=[0-9.]+ pod=new-namespace-1/nodelocal-musl `, 30*time.Second)
	t.Logf("the node-local cache's log line:\n%s", line)

	// The API server's audit log: the node-local cache's Pod list and watch carry the field
	// selector of this node, and no request of it asks for every Pod.
	reqs, err := scale.AuditLog{Path: env.node.AuditLog}.Since(0)
	if err != nil {
		t.Fatal(err)
	}
	selected, all := 0, 0
	for _, r := range reqs {
		if r.User != "system:serviceaccount:kube-system:node-local-dns" || r.Resource != "pods" {
			continue
		}
		if node, _ := nodeOf(r.FieldSelector()); node == NodeName {
			if selected == 0 {
				t.Logf("audit log: %s %s", r.Verb, r.URI)
			}
			selected++
		} else {
			all++
			t.Errorf("a Pod request of the node-local cache without the node's field selector: %s %s", r.Verb, r.URI)
		}
	}
	if selected == 0 {
		t.Errorf("no Pod list or watch of the node-local cache in the audit log %s", env.node.AuditLog)
	}
	t.Logf("audit log: %d Pod lists and watches of the node-local cache, all with fieldSelector=spec.nodeName=%s; %d without", selected, NodeName, all)

	journey.nodeLoad = "load-nodelocal"
	startLoad(t, journey.nodeLoad, NodeLocalIP.String())

	// mode refuse in the node-local cache, as an operator edits its ConfigMap, and back.
	setNodeLocalMode(t, "refuse")
	for _, k := range resolvers.Kinds {
		r := lookup(t, clientNS, nodeLocalPod(k), "my-app")
		t.Logf("node-local cache in mode refuse: %s in %s/%s got %s %s", k, clientNS, nodeLocalPod(k), show(r), r.Err)
		if show(r) != coredns.CorpIP {
			t.Errorf("%s got %s, want %s (past the namespace)", nodeLocalPod(k), show(r), coredns.CorpIP)
		}
	}
	line = waitNodeLocalLog(t, `client=[0-9.]+ pod=new-namespace-1/nodelocal-musl .*action=refused`, 30*time.Second)
	t.Logf("the node-local cache's line:\n%s", line)
	setNodeLocalMode(t, "log")
}

// setNodeLocalMode rewrites the node-local cache's nsguard block to mode and waits for it to
// run; allow adds 'allow client' for those namespaces, as an operator edits its ConfigMap.
func setNodeLocalMode(t *testing.T, mode string, allow ...string) {
	t.Helper()
	cm, err := env.node.CP.Clientset().CoreV1().ConfigMaps("kube-system").Get(t.Context(), "node-local-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?m)^(\s*)node \{\$NODE_NAME\}\n(\s*mode \w+\n)?(\s*allow client .*\n)?`)
	if !block.MatchString(cm.Data["Corefile"]) {
		t.Fatalf("no 'node {$NODE_NAME}' in the node-local Corefile:\n%s", cm.Data["Corefile"])
	}
	lines := "${1}node {$$NODE_NAME}\n${1}mode " + mode + "\n"
	if len(allow) > 0 {
		lines += "${1}allow client " + strings.Join(allow, " ") + "\n"
	}
	cm.Data["Corefile"] = block.ReplaceAllString(cm.Data["Corefile"], lines)
	before := configCounts(t, "k8s-app=node-local-dns")
	if _, err := env.node.CP.Clientset().CoreV1().ConfigMaps("kube-system").Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := waitReloaded(t, "k8s-app=node-local-dns", before, 3*time.Minute)
	t.Logf("the node-local cache runs mode %s, %s after the ConfigMap changed", mode, took.Round(time.Second))
}

// nodeOf is the node a field selector asks for, as spec.nodeName=NODE.
func nodeOf(selector string) (string, bool) {
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return "", false
	}
	return sel.RequiresExactMatch("spec.nodeName")
}

func waitNodeLocalLog(t *testing.T, pattern string, timeout time.Duration) string {
	t.Helper()
	return waitLogIn(t, nodeLocalLogs, pattern, timeout, func() {})
}

// nodeLocalLogs is every node-local cache's log, prefixed and timestamped.
func nodeLocalLogs(t *testing.T) string {
	t.Helper()
	out, _ := sh(t, nodeLocalLogsCmd)
	return out
}

// The runbook's step 5: mode refuse. Every resolver moves past the namespace, as kubectl
// nsguard explain predicts.
func stepRefuse(t *testing.T) {
	before := configCounts(t, "k8s-app=kube-dns")
	must(t, "kubectl apply --dry-run=server -k "+repoPath("deploy/kubernetes-refuse"))
	must(t, "kubectl apply -k "+repoPath("deploy/kubernetes-refuse"))
	took := waitReloaded(t, "k8s-app=kube-dns", before, 3*time.Minute)
	t.Logf("mode refuse ran on every CoreDNS Pod %s after kubectl apply", took.Round(time.Second))

	search := strings.Join(resolvers.PodSearch(clientNS), " ")
	out, code := sh(t, "kubectl nsguard explain my-app -n "+clientNS+" --mode refuse --search '"+search+"'")
	t.Logf("$ kubectl nsguard explain my-app -n %s --mode refuse --search '%s' (exit %d)\n%s", clientNS, search, code, out)
	for _, k := range resolvers.Kinds {
		r := lookup(t, clientNS, centralPod(k), "my-app")
		t.Logf("in mode refuse, %s in %s/%s looking up my-app got %s %s", k, clientNS, centralPod(k), show(r), r.Err)
		if show(r) != coredns.CorpIP {
			t.Errorf("%s got %s, want %s (my-app.corp.example, past the namespace)", k, show(r), coredns.CorpIP)
		}
		row := explainRow(out, k)
		if !strings.Contains(row, "candidate 4: the upstream's answer") {
			t.Errorf("nsguard explain predicts for %s %q, not the 4th candidate (my-app.corp.example) that it got", k, row)
		}
	}
	waitLog(t, `pod=new-namespace-1/client-musl .*action=refused`, 30*time.Second)
}

// explainRow is the line of nsguard explain's table for a resolver.
func explainRow(out string, k resolvers.Kind) string {
	name := k.String()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}

// Identity through real churn: a client Pod goes, and Pods of another namespace come until
// the CNI hands one its address. allow client (the refuse overlay allows kube-system) decides
// by the namespace of the Pod that holds the address now, and the next line names that Pod.
// The first Pod, in kube-system, is allowed: its answers pass (musl stops at the namespace's
// empty answer) and are counted as allowed, not logged. The one after it at the same address,
// in new-namespace-1, is refused: musl goes on to the corp domain, and the line names it.
func stepChurn(t *testing.T) {
	churn(t, churnPath{name: "central", scrapes: coreDNSScrapes, logs: coreDNSLogs})
}

// The same through the node-local cache, which sees the Pods' own addresses: its nsguard in
// mode refuse with 'allow client kube-system', kube-dns behind it in mode log. (kube-dns sees
// the node's address for every query the cache forwards, so with kube-dns refusing too, the
// allowed Pod's question would be refused there: refuse in one place, the one that sees the
// Pods.)
func stepNodeLocalChurn(t *testing.T) {
	setNodeLocalMode(t, "refuse", "kube-system")
	churn(t, churnPath{name: "node-local", nameserver: NodeLocalIP.String(),
		scrapes: func(*testing.T) []string { return []string{"http://" + NodeLocalIP.String() + ":9253/metrics"} },
		logs:    nodeLocalLogs})
	setNodeLocalMode(t, "log")
}

const nodeLocalLogsCmd = "kubectl logs -n kube-system -l k8s-app=node-local-dns --prefix --timestamps --tail=-1"

// churnPath is where the churning Pods ask: their nameserver ("" for kubelet's, kube-dns),
// and that server's metrics and logs.
type churnPath struct {
	name, nameserver string
	scrapes          func(*testing.T) []string
	logs             func(*testing.T) string
}

func churn(t *testing.T, p churnPath) {
	cs := env.node.CP.Clientset().CoreV1()
	zero := int64(0)
	first := "churn-" + p.name
	allowed := func() float64 { return apexCountAt(t, p.scrapes(t), "action=allowed", "client_namespace=kube-system") }
	allowedBefore := allowed()
	apply(t, clientPod("kube-system", first, resolvers.Musl, p.nameserver))
	a := waitRunning(t, "kube-system", first, 2*time.Minute)
	addr := a.Status.PodIP
	if err := wait.PollUntilContextTimeout(t.Context(), time.Second, 30*time.Second, true, func(context.Context) (bool, error) {
		r := lookup(t, "kube-system", first, "my-app")
		if r.OK() {
			t.Fatalf("%s: musl in kube-system/%s got %s: allowed, it should stop at the namespace's empty answer", p.name, first, show(r))
		}
		n := allowed()
		if n > allowedBefore {
			t.Logf("%s: kube-system/%s at %s: musl failed (allowed, not refused); allowed answers of kube-system %v -> %v", p.name, first, addr, allowedBefore, n)
		}
		return n > allowedBefore, nil
	}); err != nil {
		t.Fatalf("%s: no allowed answer counted for kube-system/%s at %s", p.name, first, addr)
	}
	if err := cs.Pods("kube-system").Delete(t.Context(), first, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "kube-system", first)
	var got string
	for i := 1; i <= 64; i++ {
		name := "churn-" + p.name + "-" + strconv.Itoa(i)
		apply(t, clientPod(clientNS, name, resolvers.Musl, p.nameserver))
		pod := waitRunning(t, clientNS, name, 2*time.Minute)
		if pod.Status.PodIP == addr {
			got = name
			t.Logf("%s: after %d Pods in %s, the CNI gave %s/%s the address %s of kube-system/%s", p.name, i, clientNS, clientNS, name, addr, first)
			break
		}
		if err := cs.Pods(clientNS).Delete(t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, clientNS, name)
	}
	if got == "" {
		t.Fatalf("%s: the CNI never handed %s out again in 64 Pods", p.name, addr)
	}
	defer cs.Pods(clientNS).Delete(context.WithoutCancel(t.Context()), got, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	// The view learns of the Pod's address from its watch, a moment after the status has it;
	// a line logged before would hold the next one back for log_interval.
	time.Sleep(2 * time.Second)
	r := lookup(t, clientNS, got, "my-app")
	line := waitLogIn(t, p.logs, `client=`+regexp.QuoteMeta(addr)+` pod=`+clientNS+`/`+got+` .*action=refused`, 30*time.Second, func() {})
	t.Logf("%s: musl in %s/%s at %s (refused) got %s; the line:\n%s", p.name, clientNS, got, addr, show(r), line)
	if show(r) != coredns.CorpIP {
		t.Errorf("%s: musl in %s/%s got %s, want %s: refused, it goes on past the namespace", p.name, clientNS, got, show(r), coredns.CorpIP)
	}
}

// apexCountAt sums nsguard's namespace apex counter over the metrics endpoints, for the labels given.
func apexCountAt(t *testing.T, urls []string, match ...string) float64 {
	t.Helper()
	var sum float64
	for _, u := range urls {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		sum += coredns.Sum(string(b), "coredns_nsguard_namespace_apex_answers_total", match...)
	}
	return sum
}

// coreDNSScrapes are the metrics endpoints of the running CoreDNS Pods.
func coreDNSScrapes(t *testing.T) []string {
	var urls []string
	for _, p := range coreDNSPods(t) {
		urls = append(urls, "http://"+p.Status.PodIP+":9153/metrics")
	}
	return urls
}

func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 300*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := env.node.CP.Clientset().CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		return err != nil, nil
	}); err != nil {
		t.Fatalf("pod %s/%s still there after a minute", ns, name)
	}
}

// Back to mode log, as the runbook rolls back.
func stepBack(t *testing.T) {
	before := configCounts(t, "k8s-app=kube-dns")
	must(t, "kubectl apply -k "+repoPath("deploy/kubernetes"))
	took := waitReloaded(t, "k8s-app=kube-dns", before, 3*time.Minute)
	t.Logf("mode log ran again on every CoreDNS Pod %s after kubectl apply", took.Round(time.Second))
	if r := lookup(t, clientNS, centralPod(resolvers.Musl), "my-app"); r.OK() {
		t.Errorf("musl got %s in mode log, want the namespace's empty answer again", show(r))
	}
}

// The incident's fix: an ExternalName Service my-app in the client's namespace. Every
// resolver reaches the Service meant, on both paths.
func stepFix(t *testing.T) {
	apply(t, TheFix)
	time.Sleep(6 * time.Second) // the node-local cache keeps a denial 5 s
	for _, k := range resolvers.Kinds {
		for _, pod := range []string{centralPod(k), nodeLocalPod(k)} {
			r := lookup(t, clientNS, pod, "my-app")
			t.Logf("with the fix, %s in %s/%s looking up my-app got %s %s", k, clientNS, pod, show(r), r.Err)
			if show(r) != journey.appIP {
				t.Errorf("%s got %s, want %s (Service my-app in new-namespace-2)", pod, show(r), journey.appIP)
			}
		}
	}
}

// The API server away for 60 s while Pods keep resolving on both paths: answers keep coming,
// nsguard's stale gauge rises and falls, nothing restarts (checked with the rest at the end).
func stepOutage(t *testing.T) {
	scrapes := map[string]string{}
	for _, p := range coreDNSPods(t) {
		scrapes["central "+p.Name] = "http://" + p.Status.PodIP + ":9153/metrics"
	}
	scrapes["node-local"] = "http://" + NodeLocalIP.String() + ":9253/metrics"
	stale := func() map[string]float64 {
		out := map[string]float64{}
		for name, url := range scrapes {
			out[name] = staleGauge(t, url)
		}
		return out
	}
	t.Logf("stale before: %v", stale())
	env.node.CP.StopAPIServer()
	// A minute away is longer than kube-controller-manager's leader lease: in a control plane
	// of one member it exits, and starts again once the API server is back.
	env.node.CP.StopControllerManager()
	start := time.Now()
	rose := map[string]time.Duration{}
	// The API server stays away the whole minute; meanwhile, note when each stale gauge rises.
	away, cancel := context.WithTimeout(t.Context(), time.Minute)
	wait.UntilWithContext(away, func(context.Context) {
		for name, v := range stale() {
			if _, ok := rose[name]; !ok && v == 1 {
				rose[name] = time.Since(start).Round(time.Second)
			}
		}
	}, 2*time.Second)
	cancel()
	if err := env.node.CP.RestartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := env.node.CP.StartControllerManager(t.Context()); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	t.Logf("the API server was away %s; stale gauge rose after %v", back.Sub(start).Round(time.Second), rose)
	for name := range scrapes {
		if _, ok := rose[name]; !ok {
			t.Errorf("%s: the stale gauge never rose while the API server was away", name)
		}
	}
	fell := map[string]time.Duration{}
	_ = wait.PollUntilContextTimeout(t.Context(), 2*time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		for name, v := range stale() {
			if _, ok := fell[name]; !ok && v == 0 {
				fell[name] = time.Since(back).Round(time.Second)
			}
		}
		return len(fell) == len(scrapes), nil
	})
	t.Logf("stale gauge fell %v after the API server came back", fell)
	if len(fell) < len(scrapes) {
		t.Errorf("the stale gauge did not fall everywhere within 2 minutes: %v", stale())
	}
	if err := env.node.Healthy(); err != nil {
		t.Error(err)
	}
	t.Logf("the control plane and kube-proxy follow changes again %s after the API server came back", waitFollowing(t).Sub(back).Round(time.Second))
	// The runbook: no rollout in the minute after the API server was away. Every informer
	// (kubelet's ConfigMap cache too, which gives a new Pod its Corefile) relists within
	// client-go's back-off, under 60 s; a roll back 39 s after started kubeadm's image on
	// nsguard's Corefile, which it cannot read, twice.
	time.Sleep(time.Until(back.Add(time.Minute)))
}

// waitFollowing waits until the EndpointSlice controller and kube-proxy follow changes
// again, and returns when they do. After the API server was away, each informer relists
// only when client-go's back-off lets it, tens of seconds later; until then a stopped
// CoreDNS Pod stays in kube-dns's EndpointSlice and in kube-proxy's rules, and the queries
// kube-proxy sends it are lost. A rollout, like the roll back that comes next, waits for
// that. The proof: a Service that selects a label put on the central load client after the
// outage gets its EndpointSlice and kube-proxy's DNAT rule to the Pod.
func waitFollowing(t *testing.T) time.Time {
	t.Helper()
	mark := strconv.FormatInt(time.Now().UnixNano(), 10)
	apply(t, `apiVersion: v1
kind: Service
metadata: {name: nsguard-e2e-following, namespace: default}
spec:
  selector: {nsguard-e2e-following: "`+mark+`"}
  ports: [{name: probe, port: 9, protocol: UDP}]
`)
	defer sh(t, "kubectl delete -n default service nsguard-e2e-following; kubectl label -n default pod "+journey.centralLoad+" nsguard-e2e-following-")
	must(t, "kubectl label -n default --overwrite pod "+journey.centralLoad+" nsguard-e2e-following="+mark)
	podIP := waitRunning(t, "default", journey.centralLoad, time.Minute).Status.PodIP
	rule := regexp.MustCompile(`(?m)"default/nsguard-e2e-following:probe".* -j DNAT --to-destination ` + regexp.QuoteMeta(podIP) + `:9$`)
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		rules, _ := sh(t, "iptables-save -t nat")
		return rule.MatchString(rules), nil
	}); err != nil {
		slices, _ := sh(t, "kubectl get endpointslices -n default -l kubernetes.io/service-name=nsguard-e2e-following -o wide")
		t.Fatalf("3 minutes after the API server came back, kube-proxy has no rule to %s for Service nsguard-e2e-following:\n%s", podIP, slices)
	}
	return time.Now()
}

// staleGauge reads coredns_nsguard_view_stale, summed over server blocks.
func staleGauge(t *testing.T, url string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return coredns.Sum(string(b), "coredns_nsguard_view_stale")
}

// The runbook's roll back to stock CoreDNS, under load.
func stepRollback(t *testing.T) {
	nsguards := coreDNSPods(t)
	// The stock Corefile first, run by nsguard's Pods, then the stock image: a stock Pod given
	// a Corefile that still says nsguard exits at once.
	before := configCounts(t, "k8s-app=kube-dns")
	must(t, "kubectl apply -k "+repoPath("deploy/kubernetes/base")+" -l '!k8s-app'")
	took := waitReloaded(t, "k8s-app=kube-dns", before, 3*time.Minute)
	t.Logf("the stock Corefile ran on every CoreDNS Pod %s after kubectl apply", took.Round(time.Second))
	must(t, "kubectl apply -k "+repoPath("deploy/kubernetes/base"))
	must(t, "kubectl delete --ignore-not-found clusterrole,clusterrolebinding system:coredns-nsguard system:coredns-nsguard-events")
	must(t, "kubectl -n kube-system rollout status deployment/coredns --timeout=5m")
	pods := coreDNSPods(t)
	for _, p := range pods {
		if img := p.Spec.Containers[0].Image; img != StockCoreDNSImage {
			t.Errorf("pod %s runs %s after the roll back, want %s", p.Name, img, StockCoreDNSImage)
		}
	}
	checkReadyTimes(t, pods)
	// rollout status is done while nsguard's Pods still answer in their lame duck: the
	// load clients go on until they have exited and left kube-dns.
	for _, p := range nsguards {
		waitGone(t, "kube-system", p.Name)
	}
	// Lookups still under way end within the resolver's own timeouts: count them too.
	waitLookupsEnded(t, time.Now())
}

// whereLost tells where the queries of the failed lookup went, from a load client's line:
//
//	FAILED began=2026-12-07T08:10:36.258229025Z took=21ms my-app.new-namespace-2: ...
func whereLost(line string) string {
	m := regexp.MustCompile(`began=(\S+) took=(\S+) `).FindStringSubmatch(line)
	if m == nil {
		return "no began and took in " + line
	}
	began, err1 := time.Parse(time.RFC3339Nano, m[1])
	took, err2 := time.ParseDuration(m[2])
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("%q: %v %v", line, err1, err2)
	}
	end := began.Add(took + 10*time.Millisecond)
	return fmt.Sprintf("queries of %s to kube-dns from %s to %s, by the Pod they went to (conntrack), as kube-dns's EndpointSlices said of it then:\n%s\nkube-dns's EndpointSlices meanwhile:\n%s",
		journey.centralIP, began.UTC().Format("15:04:05.000"), end.UTC().Format("15:04:05.000"),
		journey.record.whereQueriesWent(journey.centralIP, began, end), journey.record.timeline(began.Add(-10*time.Second), end))
}

// waitLookupsEnded waits until every lookup the load clients began before t has ended.
func waitLookupsEnded(t *testing.T, before time.Time) {
	t.Helper()
	line := regexp.MustCompile(`(?m)^t=(\S+) .* oldest=(\S+)$`)
	for _, name := range []string{journey.centralLoad, journey.nodeLoad} {
		var out string
		if err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
			out = kubectl(t, "logs", "-n", "default", name, "--tail=5")
			done := false
			for _, m := range line.FindAllStringSubmatch(out, -1) {
				at, err := time.Parse(time.RFC3339, m[1])
				if err != nil || !at.After(before) {
					continue
				}
				oldest, err := time.Parse(time.RFC3339Nano, m[2])
				done = done || m[2] == "-" || err == nil && oldest.After(before)
			}
			return done, nil
		}); err != nil {
			t.Fatalf("%s: lookups begun before %s still under way after 2 minutes:\n%s", name, before.UTC().Format(time.RFC3339Nano), out)
		}
	}
}

// Through everything: no lookup of the load clients failed, no container restarted or was
// killed for memory. The lookups answered, failed and answered slowly (after a resolver's
// retry) are told per step of the journey.
func stepNothingLost(t *testing.T) {
	type counts struct{ ok, failed, slow int }
	perStep := map[string]map[string]*counts{} // load Pod -> step -> counts
	second := regexp.MustCompile(`^t=(\S+) ok=(\d+) failed=(\d+) slow=(\d+) total_ok=(\d+) total_failed=(\d+) total_slow=(\d+)`)
	for _, name := range []string{journey.centralLoad, journey.nodeLoad} {
		out := kubectl(t, "logs", "-n", "default", name)
		perStep[name] = map[string]*counts{}
		var last []string
		if name == journey.centralLoad {
			journey.record.stop()
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			switch {
			case strings.HasPrefix(l, "FAILED"):
				t.Errorf("%s: %s", name, l)
				if name == journey.centralLoad {
					t.Log(whereLost(l))
				}
			case strings.HasPrefix(l, "SLOW"):
				t.Logf("%s: %s", name, l)
			}
			m := second.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			last = m
			at, err := time.Parse(time.RFC3339, m[1])
			if err != nil {
				t.Fatalf("%s: %q: %v", name, l, err)
			}
			// The second's lookups ended in the second before its line.
			step := journey.stepAt(at.Add(-500 * time.Millisecond))
			c := perStep[name][step]
			if c == nil {
				c = &counts{}
				perStep[name][step] = c
			}
			ok, _ := strconv.Atoi(m[2])
			failed, _ := strconv.Atoi(m[3])
			slow, _ := strconv.Atoi(m[4])
			c.ok, c.failed, c.slow = c.ok+ok, c.failed+failed, c.slow+slow
		}
		if last == nil {
			t.Fatalf("%s: no count in its log:\n%s", name, out)
		}
		t.Logf("%s: %s lookups answered, %s failed, %s answered after a second or more (%s)", name, last[5], last[6], last[7], last[0])
		if last[6] != "0" {
			t.Errorf("%s: %s lookups failed", name, last[6])
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-22s %28s %28s\n", "step", journey.centralLoad+" ok/failed/slow", journey.nodeLoad+" ok/failed/slow")
	for _, st := range journey.steps {
		row := fmt.Sprintf("%-22s", st.name)
		seen := false
		for _, name := range []string{journey.centralLoad, journey.nodeLoad} {
			if c := perStep[name][st.name]; c != nil {
				row += fmt.Sprintf(" %28s", fmt.Sprintf("%d/%d/%d", c.ok, c.failed, c.slow))
				seen = true
			} else {
				row += fmt.Sprintf(" %28s", "-")
			}
		}
		if seen {
			table.WriteString(row + "\n")
		}
	}
	t.Logf("lookups of the load clients, per step:\n%s", table.String())
	pods, err := env.node.CP.Clientset().CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			oom := c.LastTerminationState.Terminated != nil && c.LastTerminationState.Terminated.Reason == "OOMKilled" ||
				c.State.Terminated != nil && c.State.Terminated.Reason == "OOMKilled"
			if c.RestartCount != 0 || oom {
				t.Errorf("%s/%s container %s: %d restarts, OOMKilled %v", p.Namespace, p.Name, c.Name, c.RestartCount, oom)
				if c.RestartCount != 0 {
					out, _ := sh(t, "kubectl logs --previous --tail=20 -n "+p.Namespace+" "+p.Name+" -c "+c.Name)
					t.Logf("its last run (%+v):\n%s", c.LastTerminationState.Terminated, out)
				}
			}
		}
	}
	t.Logf("%d Pods, no restart, none OOMKilled; Ready times:\n%s", len(pods.Items), strings.Join(journey.readyTimes, "\n"))
	must(t, "kubectl get pods -A -o wide")
}

// Nothing left the machine: packets to the Pod and Service ranges never reached the uplink,
// even those sent on purpose to addresses no Pod or Service holds, from the host and from a
// Pod; and a Pod's packet to the outside world was dropped, not forwarded.
func stepUplink(t *testing.T) {
	pause := sandboxPID(t, clientNS, centralPod(resolvers.Go))
	probes := [][]string{
		{"dig", "+tries=1", "+time=1", "@10.73.200.200", "probe.example"}, // a Service address nobody holds
		{"dig", "+tries=1", "+time=1", "@10.72.200.1", "probe.example"},   // a Pod address outside the node's subnet
		{"dig", "+tries=1", "+time=1", "@10.72.0.30", "probe.example"},    // one inside, free
		{"nsenter", "-t", pause, "-n", "dig", "+tries=1", "+time=1", "@10.73.200.200", "probe.example"},
		{"nsenter", "-t", pause, "-n", "dig", "+tries=1", "+time=1", "@10.72.200.1", "probe.example"},
		{"nsenter", "-t", pause, "-n", "dig", "+tries=1", "+time=1", "@198.51.100.53", "probe.example"}, // the world
	}
	outBefore, err := chainPackets("mangle", fwdChain, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probes {
		out, _ := run(p...)
		t.Logf("$ %s: %s", strings.Join(p, " "), firstLine(out))
	}
	fwd, own, err := env.node.UplinkPackets()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("packets to %s or %s on the uplink %s: %d forwarded (dropped), %d of the host's own", PodCIDR, ServiceCIDR, env.node.Uplink, fwd, own)
	if fwd != 0 || own != 0 {
		t.Errorf("packets to the Pod or Service range reached the uplink: %d forwarded, %d the host's own", fwd, own)
	}
	outAfter, err := chainPackets("mangle", fwdChain, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("forwarded packets bound for the uplink, dropped: %d (the probe to the world among them)", outAfter)
	if outAfter <= outBefore {
		t.Errorf("the Pod's probe to 198.51.100.53 was not dropped in FORWARD")
	}
}

// sandboxPID is the process ID of a Pod's sandbox (pause), whose network namespace is the Pod's.
func sandboxPID(t *testing.T, ns, name string) string {
	t.Helper()
	out, err := ctr(t.Context(), "containers", "list", "labels.io.kubernetes.pod.name=="+name, "labels.io.kubernetes.pod.namespace=="+ns, "labels.io.kubernetes.container.name==POD")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 {
		t.Fatalf("no sandbox of %s/%s:\n%s", ns, name, out)
	}
	id := strings.Fields(lines[1])[0]
	task, err := ctr(t.Context(), "tasks", "ps", id)
	if err != nil {
		t.Fatal(err)
	}
	tl := strings.Split(strings.TrimSpace(task), "\n")
	if len(tl) < 2 {
		t.Fatalf("no process in sandbox %s:\n%s", id, task)
	}
	return strings.Fields(tl[1])[0]
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
