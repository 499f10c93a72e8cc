package nsguard

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/plugin/template"
	"github.com/coredns/coredns/test"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nsguard/nsguard/audit"
	"github.com/nsguard/nsguard/events"
	"github.com/nsguard/nsguard/internal/fixture"
)

var inProcessOnce sync.Once

// inProcess starts CoreDNS in this process from corefile, with nsguard in its plugin order
// as cmd/coredns places it, and every nsguard view reading cs.
func inProcess(t *testing.T, cs *fake.Clientset, corefile string) *caddy.Instance {
	t.Helper()
	inProcessOnce.Do(func() {
		if !slices.Contains(dnsserver.Directives, pluginName) {
			i := slices.Index(dnsserver.Directives, "cache")
			dnsserver.Directives = slices.Insert(slices.Clone(dnsserver.Directives), i, pluginName)
		}
	})
	prev := kubeClientFor
	kubeClientFor = func(config) (*kubeClient, error) { return &kubeClient{Interface: cs}, nil }
	t.Cleanup(func() { kubeClientFor = prev })
	inst, err := test.CoreDNSServer(corefile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(inst) })
	return inst
}

// reload is a Corefile reload, as the reload plugin and SIGUSR1 make it.
func reload(t *testing.T, inst *caddy.Instance, corefile string) *caddy.Instance {
	t.Helper()
	next, err := inst.Restart(test.NewInput(corefile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(next) })
	return next
}

// stop stops inst as CoreDNS does on exit: its servers, then its shutdown callbacks. Once
// more is harmless: an instance a reload replaced has no block left to stop.
func stop(inst *caddy.Instance) {
	inst.Stop()
	inst.ShutdownCallbacks()
}

// blockOn is a server block for zone on the loopback addresses binds, with nsguard's lines
// and a next plugin that answers every name with NODATA.
func blockOn(zone, port string, binds []string, lines ...string) string {
	return zone + ":" + port + " {\n    bind " + strings.Join(binds, " ") + "\n    nsguard {\n        " + strings.Join(lines, "\n        ") +
		"\n    }\n    template ANY ANY {\n        rcode NOERROR\n    }\n}\n"
}

// keyOf is the key of the block of zone and port, as CoreDNS writes its keys.
func keyOf(zone, port string) string { return blockKey([]string{"dns://" + zone + ".:" + port}, "") }

// guardOf is the nsguard of block key in the running instance.
func guardOf(t *testing.T, key string) *NSGuard {
	t.Helper()
	blocks.mu.Lock()
	defer blocks.mu.Unlock()
	b := blocks.m[key]
	if b == nil || b.owner == nil {
		t.Fatalf("no nsguard block %q", key)
	}
	return b.owner
}

// askFrom asks qname from the loopback address from, as a Pod with that address would.
func askFrom(t *testing.T, from, server, qname string) *dns.Msg {
	t.Helper()
	c := &dns.Client{Timeout: 2 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(from)}}}
	m := new(dns.Msg)
	m.SetQuestion(qname, dns.TypeA)
	res, _, err := c.Exchange(m, server)
	if err != nil {
		t.Fatalf("asking %s from %s: %v", qname, from, err)
	}
	return res
}

// TestReloadHandsOverTheView: a Corefile reload hands the block's view, its Pods and its
// synced state to the new instance, which lists no Pod again and names its clients at once:
// an allowed client is never refused.
func TestReloadHandsOverTheView(t *testing.T) {
	const client = "127.0.0.21"
	objs := append(fixture.Incident(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "client", UID: "u"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: client}})
	cs := fake.NewClientset(objs...)
	corefile := blockOn("cluster.local", "0", []string{"127.0.0.20"}, "mode refuse", "allow client kube-system")
	inst := inProcess(t, cs, corefile)
	key := keyOf("cluster.local", "0")
	fixture.Eventually(t, func() bool { return guardOf(t, key).view.Synced() })
	before := guardOf(t, key)
	lists := countLists(cs, "pods")

	next := reload(t, inst, corefile+"# reloaded\n")
	after := guardOf(t, key)
	if after == before {
		t.Fatal("the reload made no new instance")
	}
	if after.view != before.view || !after.view.Synced() {
		t.Errorf("the new instance's view is not the one handed over (synced %v)", after.view.Synced())
	}
	if n := countLists(cs, "pods") - lists; n != 0 {
		t.Errorf("the reload listed Pods %d times", n)
	}
	udp, _ := test.CoreDNSServerPorts(next, 0)
	if res := askFrom(t, client, udp, "my-app.svc.cluster.local."); res.Rcode != dns.RcodeSuccess {
		t.Errorf("the allowed client got %s after the reload", dns.RcodeToString[res.Rcode])
	}
}

// countLists counts the full lists of resource the fake API server was asked for: the view's
// probe lists one object, and is not counted.
func countLists(cs *fake.Clientset, resource string) int {
	n := 0
	for _, a := range cs.Actions() {
		if l, ok := a.(interface{ GetListOptions() metav1.ListOptions }); ok && a.Matches("list", resource) && l.GetListOptions().Limit != 1 {
			n++
		}
	}
	return n
}

// seriesOf counts the series of c with label server.
func seriesOf(c prometheus.Collector, server string) int {
	ch := make(chan prometheus.Metric, 1000)
	c.Collect(ch)
	close(ch)
	n := 0
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			continue
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == "server" && l.GetValue() == server {
				n++
			}
		}
	}
	return n
}

func captureGauge(server string) float64 {
	return testutil.ToFloat64(findingsHeld.WithLabelValues(server, audit.CheckNamespaceCapture, string(audit.Warning)))
}

// A reload that adds an address to a block keeps its findings gauge, on the old address too:
// nothing of the instance before deletes what the new one writes, then or later.
func TestFindingsGaugeAcrossAddressChange(t *testing.T) {
	cs := fake.NewClientset(fixture.Incident()...)
	inst := inProcess(t, cs, blockOn("cluster.local", "0", []string{"127.0.0.22"}))
	a, b := "dns://127.0.0.22:0", "dns://127.0.0.23:0"
	fixture.Eventually(t, func() bool { return captureGauge(a) == 1 })
	next := reload(t, inst, blockOn("cluster.local", "0", []string{"127.0.0.22", "127.0.0.23"}))
	fixture.Eventually(t, func() bool { return captureGauge(b) == 1 })
	time.Sleep(5 * time.Second) // past any expiry of the old instance's findings
	for _, s := range []string{a, b} {
		if g := captureGauge(s); g != 1 {
			t.Errorf("after the reload the capture gauge of %s reads %v, want 1", s, g)
		}
	}
	// An address the block no longer serves loses its series.
	reload(t, next, blockOn("cluster.local", "0", []string{"127.0.0.23"}))
	if n := seriesOf(findingsHeld, a); n != 0 {
		t.Errorf("%d findings series left for %s, which no block serves", n, a)
	}
}

// Two nsguard blocks on one address keep their findings apart: neither says the other's
// findings went, and the address's gauge holds both.
func TestFindingsTwoBlocksOneAddress(t *testing.T) {
	cs := fake.NewClientset(fixture.Incident()...)
	buf := captureLog(t)
	inProcess(t, cs, blockOn("cluster.local", "0", []string{"127.0.0.24"})+blockOn("example.org", "0", []string{"127.0.0.24"}))
	want := []string{`name="my-app.svc.cluster.local."`, `name="my-app.svc.example.org."`}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		s := buf.String()
		if strings.Contains(s, want[0]) && strings.Contains(s, want[1]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no finding of each block within 5s:\n%s", s)
		}
	}
	time.Sleep(3 * time.Second)
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "no longer holds") {
			t.Errorf("a finding said gone while it holds: %s", l)
		}
	}
	// Namespace db captures Service db in both zones: two findings of severity warning.
	if g := captureGauge("dns://127.0.0.24:0"); g != 2 {
		t.Errorf("the capture gauge reads %v, want 2: one per zone", g)
	}
}

// A reload that drops the nsguard block stops what it ran, and its series go.
func TestReloadWithoutTheBlock(t *testing.T) {
	cs := fake.NewClientset(fixture.Incident()...)
	inst := inProcess(t, cs, blockOn("cluster.local", "0", []string{"127.0.0.25"}))
	server := "dns://127.0.0.25:0"
	fixture.Eventually(t, func() bool { return captureGauge(server) == 1 })
	key := keyOf("cluster.local", "0")
	run := guardOf(t, key).block.cur.view.run
	reload(t, inst, "cluster.local:0 {\n    bind 127.0.0.25\n    template ANY ANY {\n        rcode NOERROR\n    }\n}\n")
	blocks.mu.Lock()
	_, ok := blocks.m[key]
	blocks.mu.Unlock()
	if ok {
		t.Error("the block is still registered")
	}
	if n := seriesOf(findingsHeld, server); n != 0 {
		t.Errorf("%d findings series left", n)
	}
	if n := seriesOf(viewSynced, server); n != 0 {
		t.Errorf("view_synced still there")
	}
	done := make(chan struct{})
	go func() { run.Stop(); close(done) }() // stopped already: returns at once
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("the view still runs")
	}
}

// A reload that fails after nsguard's new instance took the block over gives it back: the
// running instance keeps its view, its findings and its gauges.
func TestReloadThatFails(t *testing.T) {
	cs := fake.NewClientset(fixture.Incident()...)
	// A port whose address 127.0.0.27 something else holds: the new instance cannot serve it.
	taken, err := net.ListenPacket("udp", "127.0.0.27:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := strconv.Itoa(taken.LocalAddr().(*net.UDPAddr).Port)
	corefile := blockOn("cluster.local", port, []string{"127.0.0.26"})
	inst := inProcess(t, cs, corefile)
	server := "dns://127.0.0.26:" + port
	fixture.Eventually(t, func() bool { return captureGauge(server) == 1 })
	key := keyOf("cluster.local", port)
	g := guardOf(t, key)
	if _, err := inst.Restart(test.NewInput(blockOn("cluster.local", port, []string{"127.0.0.26", "127.0.0.27"}))); err == nil {
		t.Fatal("the reload onto a taken address did not fail")
	}
	blocks.mu.Lock()
	b := blocks.m[key]
	owner, next := b.owner, b.next
	blocks.mu.Unlock()
	if owner != g || next != nil {
		t.Fatalf("after the failed reload: owner %p (want %p), next %p", owner, g, next)
	}
	// The running instance's findings write the book again: a namespace made now is found.
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "primary"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixture.Eventually(t, func() bool { return captureGauge(server) == 2 })
}

// A reload that keeps the Events' settings hands the worker over, with what waits in it;
// one that changes them starts a new worker and stops the old one, which counts what still
// waits as stopped.
func TestReloadKeepsEventsWorker(t *testing.T) {
	cs := fake.NewClientset(fixture.Incident()...)
	inst := inProcess(t, cs, blockOn("cluster.local", "0", []string{"127.0.0.28"}, "events 1h"))
	key := keyOf("cluster.local", "0")
	first := guardOf(t, key).events
	next := reload(t, inst, blockOn("cluster.local", "0", []string{"127.0.0.28"}, "events 1h", "log_limit 20"))
	if w := guardOf(t, key).events; w != first {
		t.Error("a reload that keeps the Events' settings made a new worker")
	}
	reload(t, next, blockOn("cluster.local", "0", []string{"127.0.0.28"}, "events 2h"))
	if w := guardOf(t, key).events; w == first {
		t.Fatal("a reload that changes the interval kept the worker")
	}
	stopped := testutil.ToFloat64(eventsDropped.WithLabelValues("test", events.DropStopped))
	first.Offer(events.Offer{Server: "test", Pod: "new-namespace-1/client"})
	if got := testutil.ToFloat64(eventsDropped.WithLabelValues("test", events.DropStopped)) - stopped; got != 1 {
		t.Errorf("an offer to the old worker counted %v stopped, want 1: it must have stopped", got)
	}
}

// A reload that changes 'node' starts a new view: the one handed over watches the other
// node's Pods, and would name none of this node's clients.
func TestReloadThatChangesTheNode(t *testing.T) {
	cs := fake.NewClientset(fixture.Incident()...)
	inst := inProcess(t, cs, blockOn("cluster.local", "0", []string{"127.0.0.29"}, "node node-a"))
	key := keyOf("cluster.local", "0")
	fixture.Eventually(t, func() bool { return guardOf(t, key).view.Synced() })
	first := guardOf(t, key).view
	next := reload(t, inst, blockOn("cluster.local", "0", []string{"127.0.0.29"}, "node node-a", "log_limit 20"))
	if v := guardOf(t, key).view; v != first {
		t.Error("a reload that keeps the node made a new view")
	}
	reload(t, next, blockOn("cluster.local", "0", []string{"127.0.0.29"}, "node node-b"))
	if v := guardOf(t, key).view; v == first {
		t.Fatal("a reload that changes the node kept the view of node-a's Pods")
	}
	fixture.Eventually(t, func() bool {
		for _, a := range cs.Actions() {
			if l, ok := a.(interface{ GetListOptions() metav1.ListOptions }); ok && a.Matches("list", "pods") &&
				l.GetListOptions().FieldSelector == "spec.nodeName=node-b" {
				return true
			}
		}
		return false
	})
}
