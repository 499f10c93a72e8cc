//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/clusterview"
	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/scale"
)

// jsonProxy is an API proxy that speaks JSON only: it forwards every request to the API
// server asking for JSON, whatever the client accepts, and counts the Pod answers by media type.
type jsonProxy struct {
	url string
	mu  sync.Mutex
	pod map[string]int // media type of each answer for /api/v1/pods
}

func newJSONProxy(t *testing.T, server string) *jsonProxy {
	target, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	p := &jsonProxy{pod: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Header.Set("Accept", "application/json")
		},
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		FlushInterval: -1, // watches stream
		ModifyResponse: func(r *http.Response) error {
			if r.Request.URL.Path == "/api/v1/pods" {
				mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
				p.mu.Lock()
				p.pod[mt]++
				p.mu.Unlock()
			}
			return nil
		},
	}
	srv := httptest.NewTLSServer(rp)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

func (p *jsonProxy) podAnswers() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := map[string]int{}
	for k, v := range p.pod {
		c[k] = v
	}
	return c
}

// TestViewThroughJSONProxy: nsguard's view reaches the API server through a proxy that answers
// JSON only. It names the client Pod as it does in protobuf, and stays fresh.
func TestViewThroughJSONProxy(t *testing.T) {
	proxy := newJSONProxy(t, env.cp.Server)
	p := startDNS(t, "127.53.7.1", coredns.Config{NSGuard: withView("endpoint " + proxy.url)})
	p.waitSynced(t)
	p.expect(t, "my-app", trapped)
	lines := strings.Join(p.nsguardLines(), "\n")
	answers := proxy.podAnswers()
	t.Logf("through a JSON-only proxy: view_synced %v, view_stale %v, Pod answers by media type %v; nsguard's lines:\n%s",
		metric(t, p, "coredns_nsguard_view_synced"), metric(t, p, "coredns_nsguard_view_stale"), answers, lines)
	if answers["application/json"] == 0 || len(answers) != 1 {
		t.Fatalf("the proxy answered the Pod requests as %v, want JSON only", answers)
	}
	if !strings.Contains(lines, "client="+clientPodIP+" pod=new-namespace-1/client") {
		t.Errorf("no line names the client Pod:\n%s", lines)
	}
	if got := metric(t, p, "coredns_nsguard_view_stale"); got != 0 {
		t.Errorf("view_stale %v, want 0", got)
	}
	if strings.Contains(lines, "cannot read the Pods") {
		t.Errorf("the view says it cannot read Pods it reads:\n%s", lines)
	}
}

// TestViewWithoutStreamedLists: kube-apiserver runs with its WatchList feature off, so it
// refuses every streamed list (422). At the first sync and at the relist after an API server
// restart, nsguard's Pod watch lists at once instead: the view names the client, never goes
// stale for it, logs no warning and counts no stale decision. The audit log shows each refused
// streamed list and the list right after it.
func TestViewWithoutStreamedLists(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	opts := scale.ControlPlaneOptions()
	opts.APIServerArgs = append(opts.APIServerArgs, "--feature-gates=WatchList=false")
	cp, err := cluster.StartWithOptions(ctx, env.binDir, filepath.Join(dir, "cluster"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	cs := cp.Clientset()
	if err := cluster.ApplyIncident(ctx, cs, clientPodIP); err != nil {
		t.Fatal(err)
	}
	audit := scale.AuditLog{Path: cp.AuditLog()}

	p := startDNSOn(t, cp, "127.53.7.2", coredns.Config{NSGuard: "nsguard {\n        kubeconfig " + cp.Kubeconfig + "\n        log_interval 100ms\n    }"})
	p.waitSynced(t)
	p.expect(t, "my-app", trapped)
	if lines := strings.Join(p.nsguardLines(), "\n"); !strings.Contains(lines, "pod=new-namespace-1/client") {
		t.Errorf("no line names the client Pod:\n%s", lines)
	}
	if n := strings.Count(p.dns.Log(), "does not stream the list of Pods"); n != 1 {
		t.Errorf("%d lines say the API server does not stream lists, want 1:\n%s", n, p.dns.Log())
	}
	fellBack(t, audit, 0, "the first sync")

	// A relist: writes nobody watches move etcd past every watcher, then the API server restarts.
	if err := scale.Churn(ctx, cs, 50, 4); err != nil {
		t.Fatal(err)
	}
	offset, err := audit.Offset()
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	// The view is rightly stale while the API server is away; it must not go stale again for the
	// streamed list the relist asks for, 30 to 60 s after the kubernetes plugin's.
	waitMetric(t, p.dns, "coredns_nsguard_view_stale", 0, clusterview.ProbeEvery+30*time.Second)
	back := time.Now()
	warnings := len(p.warnings())
	decisions := metric(t, p, "coredns_nsguard_view_stale_decisions_total")

	var staleSeen atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // ask a held question, and read the gauge, without pause through the relist
		defer wg.Done()
		c := &dns.Client{Timeout: time.Second}
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			m := new(dns.Msg)
			m.SetQuestion(apex, dns.TypeA)
			c.Exchange(m, p.dns.IP+":53")
			if page, err := p.dns.Scrape(); err == nil && coredns.Sum(page, "coredns_nsguard_view_stale") != 0 {
				staleSeen.Add(1)
			}
		}
	}()
	relisted := func(context.Context) (bool, error) {
		reqs, err := audit.Since(offset)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			if r.Agent == "coredns-nsguard" && r.Resource == "pods" && r.Verb == "list" && !r.Probe() && r.Completed {
				return true, nil
			}
		}
		return false, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Until(back.Add(2*clusterview.PodsRelistAfter+clusterview.CollectionWait+clusterview.SweepWait+30*time.Second)), true, relisted); err != nil {
		close(stop)
		wg.Wait()
		t.Fatalf("nsguard did not list Pods again within %v of the API server's return", time.Since(back).Round(time.Second))
	}
	time.Sleep(5 * time.Second)
	close(stop)
	wg.Wait()

	after := metric(t, p, "coredns_nsguard_view_stale_decisions_total")
	newWarnings := p.warnings()[warnings:]
	t.Logf("through the relist (%v after the API server was back): view_stale read 1 in %d scrapes, view_stale_decisions_total %v then %v, new warnings %q",
		time.Since(back).Round(time.Second), staleSeen.Load(), decisions, after, newWarnings)
	if staleSeen.Load() != 0 || after != decisions || len(newWarnings) != 0 {
		t.Errorf("a refused streamed list made the view stale: view_stale read 1 in %d scrapes, stale decisions %v to %v, warnings %q",
			staleSeen.Load(), decisions, after, newWarnings)
	}
	fellBack(t, audit, offset, "the relist")
}

// fellBack checks, in the audit log from offset on, that nsguard's streamed list of Pods was
// refused and that it listed them right after.
func fellBack(t *testing.T, audit scale.AuditLog, offset int64, when string) {
	t.Helper()
	reqs, err := audit.Since(offset)
	if err != nil {
		t.Fatal(err)
	}
	var refused *scale.Request
	for i, r := range reqs {
		if r.Agent != "coredns-nsguard" || r.Resource != "pods" || r.Probe() {
			continue
		}
		switch {
		case r.SendsInitialEvents() && r.Code == http.StatusUnprocessableEntity:
			refused = &reqs[i]
		case r.Verb == "list" && refused != nil:
			gap := r.Start.Sub(refused.End)
			t.Logf("%s: streamed list of Pods refused (%d), then a list %v later", when, refused.Code, gap.Round(time.Millisecond))
			if gap > 5*time.Second {
				t.Errorf("%s: the list came %v after the refused streamed list, want at once", when, gap)
			}
			return
		}
	}
	t.Errorf("%s: no refused streamed list of Pods followed by a list in the audit log", when)
}

// warnings are nsguard's warnings that are not about a query: the view's own.
func (p *pod) warnings() []string {
	var w []string
	for _, l := range strings.Split(p.dns.Log(), "\n") {
		if strings.Contains(l, "[WARNING] plugin/nsguard: cluster view") {
			w = append(w, l)
		}
	}
	return w
}
