//go:build e2e

package e2e

import (
	"context"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// waitMetric waits up to within for the metric on srv's /metrics page to read want.
func waitMetric(t *testing.T, srv *coredns.Server, name string, want float64, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, within, true, func(context.Context) (bool, error) {
		page, err := srv.Scrape()
		return err == nil && coredns.Sum(page, name) == want, nil
	}); err != nil {
		t.Fatalf("%s did not read %v within %v:\n%s", name, want, within, srv.Log())
	}
	return time.Since(start)
}

// TestViewStaleWhenForbidden: with CoreDNS's RBAC gone and the API server restarted, every
// watch of CoreDNS fails with 403 from then on. nsguard says its view is stale, and fresh
// again once the RBAC is back. CoreDNS runs as its ServiceAccount, with the shipped RBAC.
func TestViewStaleWhenForbidden(t *testing.T) {
	s := newStack(t)
	srv := s.start(t, distro{name: "kubeadm"}, []string{clusterDNSIP}, "nsguard")
	if err := srv.WaitViewSynced(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, srv, "coredns_nsguard_view_stale", 0, 5*time.Second)

	cs := env.cp.Clientset()
	ctx := t.Context()
	bindings := []string{"system:coredns", "system:coredns-nsguard"}
	for _, b := range bindings {
		if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, b, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if _, err := cluster.CoreDNSToken(context.Background(), cs, root); err != nil { // recreates what is missing
			t.Errorf("restoring CoreDNS's RBAC: %v", err)
		}
	}
	t.Cleanup(restore)
	if err := env.cp.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	took := waitMetric(t, srv, "coredns_nsguard_view_stale", 1, 45*time.Second)
	t.Logf("view_stale 1 %v after the API server came back without CoreDNS's RBAC", took.Round(100*time.Millisecond))

	restore()
	took = waitMetric(t, srv, "coredns_nsguard_view_stale", 0, 60*time.Second)
	t.Logf("view_stale 0 %v after the RBAC was restored", took.Round(100*time.Millisecond))
}

// TestViewStaleWhenEtcdHangs: with etcd stopped for 75 s, the API server keeps serving watches
// from its cache, which just go quiet; nsguard's probe, a consistent read, sees it.
func TestViewStaleWhenEtcdHangs(t *testing.T) {
	p := startDNS(t, "127.53.1.26", coredns.Config{NSGuard: withView()})
	p.waitSynced(t)
	if err := env.cp.PauseEtcd(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := env.cp.ResumeEtcd(); err != nil {
				t.Errorf("resuming etcd: %v", err)
			}
		}
	}
	t.Cleanup(resume)
	took := waitMetric(t, p.dns, "coredns_nsguard_view_stale", 1, 60*time.Second)
	t.Logf("view_stale 1 %v after etcd hung", took.Round(100*time.Millisecond))
	time.Sleep(time.Until(paused.Add(75 * time.Second)))
	resume()
	took = waitMetric(t, p.dns, "coredns_nsguard_view_stale", 0, 60*time.Second)
	t.Logf("view_stale 0 %v after etcd went on", took.Round(100*time.Millisecond))
}

// TestDownAPIServerRequestRate counts what nsguard sends to an API server that is down: its
// view reaches the API server through a TCP relay, which then stops listening, so that each
// connection is refused as by a host whose API server is gone. iptables counts the attempts
// (SYNs). One replica must stay within client-go's back-off and the view's probe, far below
// a request a second, however long the outage lasts.
func TestDownAPIServerRequestRate(t *testing.T) {
	relay := newRelay(t, env.cp.Server[len("https://"):])
	p := startDNS(t, "127.53.1.27", coredns.Config{NSGuard: withView("endpoint https://" + relay.addr)})
	p.waitSynced(t)

	syns := countSYNs(t, relay.addr)
	relay.down()
	const outage = 60 * time.Second
	time.Sleep(outage)
	n := syns()
	rate := float64(n) / outage.Seconds()
	t.Logf("nsguard tried %d connections to a down API server in %v: %.2f a second", n, outage, rate)
	if rate > 0.5 {
		t.Errorf("%.2f connections a second to a down API server; want client-go's back-off (at most one every 2 s)", rate)
	}
	if got := metric(t, p, "coredns_nsguard_view_stale"); got != 1 {
		t.Errorf("view_stale %v while the API server was down, want 1", got)
	}
}

// countSYNs counts the TCP connections opened to addr from now on, with an iptables rule that
// the test removes; the returned function reads the count.
func countSYNs(t *testing.T, addr string) func() int {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	rule := []string{"OUTPUT", "-p", "tcp", "-d", host, "--dport", port, "--tcp-flags", "SYN,ACK,RST", "SYN",
		"-m", "comment", "--comment", "nsguard-e2e-" + port, "-j", "ACCEPT"}
	if out, err := exec.Command("iptables", append([]string{"-I"}, rule...)...).CombinedOutput(); err != nil {
		t.Fatalf("iptables: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("iptables", append([]string{"-D"}, rule...)...).Run() })
	return func() int {
		out, err := exec.Command("iptables", "-L", "OUTPUT", "-v", "-n", "-x").CombinedOutput()
		if err != nil {
			t.Fatalf("iptables: %v: %s", err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); strings.Contains(l, "nsguard-e2e-"+port) && len(f) > 0 {
				n, err := strconv.Atoi(f[0])
				if err != nil {
					t.Fatalf("iptables counter %q: %v", l, err)
				}
				return n
			}
		}
		t.Fatalf("no iptables rule nsguard-e2e-%s:\n%s", port, out)
		return 0
	}
}

// relay forwards TCP connections to target until down, then listens no more.
type relay struct {
	addr   string
	target string
	l      net.Listener
	mu     sync.Mutex
	conns  []net.Conn
}

func newRelay(t *testing.T, target string) *relay {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{addr: l.Addr().String(), target: target, l: l}
	t.Cleanup(r.down)
	go r.serve()
	return r
}

func (r *relay) serve() {
	for {
		c, err := r.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		r.mu.Lock()
		r.conns = append(r.conns, c, up)
		r.mu.Unlock()
		go func() { io.Copy(up, c); up.Close() }()
		go func() { io.Copy(c, up); c.Close() }()
	}
}

// down stops listening and cuts every relayed connection.
func (r *relay) down() {
	r.l.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}
