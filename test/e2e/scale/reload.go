package scale

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// ReloadGuard is the configuration of the reload proof: refusals on, and the kube-system
// clients exempt, as an operator who turns refusals on does first. A line a second per client
// and question shows whether each line still names its Pod.
var ReloadGuard = Config{Name: "+ `nsguard { mode refuse; allow client kube-system }`",
	NSGuard: "nsguard {\n    mode refuse\n    allow client kube-system\n    log_interval 1s\n    log_limit 100\n    kubeconfig %s\n}"}

// The two clients of the reload proof: a kube-system Pod that 'allow client' exempts, and a
// Pod of an application namespace whose answers are refused and logged. They are loopback
// addresses, so that the proof asks from them.
const (
	AllowedPod     = "nsguard-reload-allowed"
	AllowedPodIP   = "127.53.61.10"
	RefusedNS      = "nsguard-reload"
	RefusedPod     = "nsguard-reload-refused"
	RefusedPodIP   = "127.53.61.11"
	reloadMarker   = "[INFO] Reloading"
	reloadDone     = "[INFO] Reloading complete"
	reloadQuestion = "svc.cluster.local." // after the namespace's name: its apex, which nsguard holds
)

// ReloadResult is what a Corefile reload under load did to the decisions.
type ReloadResult struct {
	Asked        int64         // questions of the allowed client across the reload
	Refused      int64         // of those, answered NXDOMAIN: nsguard's refusal
	ServFail     int64         // of those, answered SERVFAIL (the kubernetes plugin before its sync)
	Failed       int64         // of those, not answered
	RefusedAsked int64         // questions of the other client
	Lines        int           // nsguard's answer lines from the reload on
	LinesNoPod   []string      // of those, lines that name no Pod
	AllowedLines []string      // lines about the allowed client: it must have none
	PodLists     Counts        // LISTs and streaming lists of Pods after the reload, by agent (audit log)
	ReloadTime   time.Duration // from the signal to "Reloading complete"
	Watched      time.Duration // how long the clients asked after the reload completed
}

func (r ReloadResult) String() string {
	return fmt.Sprintf("allowed client: %d questions, %d refused, %d SERVFAIL, %d unanswered; other client: %d questions; %d lines after the reload, %d without pod=, %d about the allowed client; "+
		"Pod lists after the reload: %v; reload took %v, watched %v after it",
		r.Asked, r.Refused, r.ServFail, r.Failed, r.RefusedAsked, r.Lines, len(r.LinesNoPod), len(r.AllowedLines), r.PodLists, r.ReloadTime.Round(time.Millisecond), r.Watched.Round(time.Second))
}

// Reload runs CoreDNS with ReloadGuard, lets the two client Pods ask for a namespace apex
// without pause, reloads the Corefile (SIGUSR1, as the reload plugin does on a ConfigMap edit)
// and keeps asking for after. It reports the allowed client's refusals, the lines that name
// no Pod, and the Pod lists the API server's audit log shows after the reload.
func Reload(ctx context.Context, env Env, after time.Duration) (res ReloadResult, err error) {
	env, err = env.defaults()
	if err != nil {
		return res, err
	}
	for _, c := range []struct{ ns, name, ip string }{{"kube-system", AllowedPod, AllowedPodIP}, {RefusedNS, RefusedPod, RefusedPodIP}} {
		if err := cluster.CreateRunningPod(ctx, env.Client, c.ns, c.name, c.ip); err != nil {
			return res, err
		}
	}
	dir := filepath.Join(env.Dir, "reload")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	corefile, metrics, ready, err := env.corefileFor(ReloadGuard)
	if err != nil {
		return res, err
	}
	srv, err := coredns.StartWithEnv(ctx, env.CoreDNS, dir, env.IP, corefile, metrics, "cluster.local.", env.processEnv())
	if err != nil {
		return res, err
	}
	defer func() {
		if serr := srv.Stop(); serr != nil && err == nil {
			err = serr
		}
		_ = os.WriteFile(filepath.Join(dir, "coredns.log"), []byte(srv.Log()), 0o644)
	}()
	if err := waitSynced(ctx, srv, ready, true, env.Timeout); err != nil {
		return res, err
	}
	apex := Namespace(0) + "." + reloadQuestion
	allowed, refused := asker{ip: AllowedPodIP, server: env.IP, qname: apex}, asker{ip: RefusedPodIP, server: env.IP, qname: apex}
	// Both clients are named before the reload: the allowed one gets its answer, the other
	// one's line names its Pod.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, env.Timeout, true, func(context.Context) (bool, error) {
		okAllowed := allowed.once() == dns.RcodeSuccess
		refused.once()
		return okAllowed && strings.Contains(srv.Log(), "pod="+RefusedNS+"/"+RefusedPod), nil
	}); err != nil {
		return res, fmt.Errorf("the clients were not named within %v:\n%s", env.Timeout, tail(srv.Log(), 20))
	}

	audit := AuditLog{Path: env.AuditLog}
	var offset int64
	if env.AuditLog != "" {
		if offset, err = audit.Offset(); err != nil {
			return res, err
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, a := range []*asker{&allowed, &refused} {
		wg.Go(func() { a.run(stop) })
	}
	logAt := len(srv.Log())
	time.Sleep(time.Second) // asking before the reload too
	began := time.Now()
	if err := srv.Signal(syscall.SIGUSR1); err != nil {
		close(stop)
		wg.Wait()
		return res, err
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, env.Timeout, true, func(context.Context) (bool, error) {
		return strings.Contains(srv.Log()[logAt:], reloadDone), nil
	}); err != nil {
		close(stop)
		wg.Wait()
		return res, fmt.Errorf("the reload did not complete within %v:\n%s", env.Timeout, tail(srv.Log(), 20))
	}
	res.ReloadTime = time.Since(began)
	done := time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(after):
	}
	res.Watched = time.Since(done)
	close(stop)
	wg.Wait()
	time.Sleep(500 * time.Millisecond) // the last lines are written after their answers

	res.Asked, res.Refused, res.ServFail, res.Failed = allowed.asked.Load(), allowed.refused.Load(), allowed.servfail.Load(), allowed.failed.Load()
	res.RefusedAsked = refused.asked.Load()
	log := srv.Log()[logAt:]
	if i := strings.Index(log, reloadMarker); i >= 0 {
		log = log[i:]
	}
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "[WARNING] plugin/nsguard: answer through namespace") {
			continue
		}
		res.Lines++
		if !strings.Contains(l, " pod=") {
			res.LinesNoPod = append(res.LinesNoPod, l)
		}
		if strings.Contains(l, "client="+AllowedPodIP+" ") {
			res.AllowedLines = append(res.AllowedLines, l)
		}
	}
	if env.AuditLog != "" {
		reqs, err := audit.Since(offset)
		if err != nil {
			return res, err
		}
		res.PodLists = Counts{}
		for k, n := range FullStates(reqs) {
			if k.Resource == "pods" && isCoreDNS(k.Agent) {
				res.PodLists[k] = n
			}
		}
	}
	env.Logf.printf("reload: %s", res)
	return res, nil
}

// asker asks one question from one client address, again and again.
type asker struct {
	ip, server, qname                string
	asked, refused, servfail, failed atomic.Int64
}

// once asks once and returns the rcode, or -1 when no answer came.
func (a *asker) once() int {
	c := &dns.Client{Timeout: 2 * time.Second, Dialer: &net.Dialer{LocalAddr: &net.UDPAddr{IP: net.ParseIP(a.ip)}}}
	m := new(dns.Msg)
	m.SetQuestion(a.qname, dns.TypeA)
	res, _, err := c.Exchange(m, a.server+":53")
	if err != nil {
		return -1
	}
	return res.Rcode
}

// run asks until stop closes, each question as soon as the last was answered.
func (a *asker) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		a.asked.Add(1)
		switch a.once() {
		case dns.RcodeNameError:
			a.refused.Add(1)
		case dns.RcodeServerFailure:
			a.servfail.Add(1)
		case -1:
			a.failed.Add(1)
		}
	}
}
