//go:build e2e

package node

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

// dnsRecord keeps, while the load clients run, what tells where their queries to kube-dns
// went: each change of kube-dns's EndpointSlices with its endpoints' conditions, and each
// conntrack event of UDP to kube-dns's address (a new flow and the Pod it was DNAT'd to, a
// flow used again, a flow deleted). When a lookup fails, where its queries went is told from
// them: a query can only be lost to a Pod that no longer answers.
type dnsRecord struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	once   sync.Once
	ctPath string

	mu     sync.Mutex
	slices []sliceChange
}

// sliceChange is an endpoint of kube-dns as an EndpointSlice said it was, from when.
type sliceChange struct {
	at        time.Time
	ip, pod   string
	state     string // ready, serving (terminating), terminating (not serving), not ready, gone
	sliceName string
}

// recordDNS starts recording; stop it with stop.
func recordDNS(t *testing.T, dir string) *dnsRecord {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &dnsRecord{cancel: cancel, ctPath: filepath.Join(dir, "conntrack-kube-dns.txt")}
	f, err := os.Create(r.ctPath)
	if err != nil {
		t.Fatal(err)
	}
	// -o timestamp: each event with when it happened (seconds since the epoch); -b: a socket
	// buffer that keeps up with every flow of the machine (the kernel filters no event out).
	ct := exec.CommandContext(ctx, "conntrack", "-E", "-b", "33554432", "-p", "udp", "-d", DNSServiceIP.String(), "--dport", "53", "-o", "timestamp")
	ct.Stdout, ct.Stderr = f, f
	if err := ct.Start(); err != nil {
		f.Close()
		t.Fatalf("conntrack -E: %v", err)
	}
	r.done.Go(func() { ct.Wait(); f.Close() })

	// A watch of its own, begun again at once whenever it ends (the API server away): an
	// informer would wait out client-go's back-off, and miss what happens meanwhile.
	r.done.Go(func() {
		// Non-sliding: a watch that lasted 200 ms begins again at once, a refused one after 200 ms.
		seen := map[string]map[string]string{} // slice -> ip -> pod
		wait.NonSlidingUntilWithContext(ctx, func(ctx context.Context) {
			w, err := env.node.CP.Clientset().DiscoveryV1().EndpointSlices("kube-system").Watch(ctx,
				metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kube-dns"})
			if err != nil {
				return
			}
			for ev := range w.ResultChan() {
				if s, ok := ev.Object.(*discoveryv1.EndpointSlice); ok {
					r.change(seen, s, ev.Type == watch.Deleted)
				}
			}
		}, 200*time.Millisecond)
	})
	return r
}

// change records what an EndpointSlice of kube-dns says now, against what it said before.
func (r *dnsRecord) change(seen map[string]map[string]string, s *discoveryv1.EndpointSlice, deleted bool) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := map[string]string{}
	for _, e := range s.Endpoints {
		if len(e.Addresses) == 0 || deleted {
			continue
		}
		pod := ""
		if e.TargetRef != nil {
			pod = e.TargetRef.Name
		}
		cur[e.Addresses[0]] = pod
		r.slices = append(r.slices, sliceChange{at: now, ip: e.Addresses[0], pod: pod, state: endpointState(e.Conditions), sliceName: s.Name})
	}
	for ip, pod := range seen[s.Name] {
		if _, ok := cur[ip]; !ok {
			r.slices = append(r.slices, sliceChange{at: now, ip: ip, pod: pod, state: "gone", sliceName: s.Name})
		}
	}
	seen[s.Name] = cur
}

func endpointState(c discoveryv1.EndpointConditions) string {
	is := func(b *bool) bool { return b != nil && *b }
	switch {
	case is(c.Ready):
		return "ready"
	case is(c.Terminating) && is(c.Serving):
		return "serving (terminating)"
	case is(c.Terminating):
		return "terminating (not serving)"
	}
	return "not ready"
}

// stop ends the recording; what it recorded stays readable. Safe to call more than once.
func (r *dnsRecord) stop() {
	r.once.Do(func() {
		r.cancel()
		r.done.Wait()
	})
}

// stateAt is what the EndpointSlices said of ip at t: the pod and its state.
func (r *dnsRecord) stateAt(ip string, t time.Time) (pod, state string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	state = "not in kube-dns"
	for _, c := range r.slices {
		if c.ip != ip || c.at.After(t) {
			continue
		}
		// The same address may be in several changes of one moment; the last one holds.
		pod, state = c.pod, c.state
	}
	if pod == "" {
		for _, c := range r.slices {
			if c.ip == ip {
				pod = c.pod
			}
		}
	}
	return pod, state
}

// ctEvent is a conntrack event of a client's flow to kube-dns: NEW (a query on a new flow,
// DNAT'd by the Service's rules), UPDATE (a flow used again, DNAT'd as before), DESTROY.
var ctEvent = regexp.MustCompile(`^\[(\d+)\.(\d+)\]\s+\[(\w+)\] udp\s+\d+ \d+ src=(\S+) dst=\S+ sport=(\d+) dport=53 (?:\[UNREPLIED\] )?src=(\S+) `)

// whereQueriesWent tells, for a client address and a span of time, to which Pods its
// queries to kube-dns went (by the conntrack events of its flows), and what the EndpointSlices
// said of each Pod at the time.
func (r *dnsRecord) whereQueriesWent(client string, from, to time.Time) string {
	f, err := os.Open(r.ctPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	type key struct{ ip, state, pod string }
	count := map[key]int{}
	var firstLost []string
	sc := bufio.NewScanner(f)
	overrun := 0
	for sc.Scan() {
		if strings.Contains(sc.Text(), "ENOBUFS") {
			overrun++
		}
		m := ctEvent.FindStringSubmatch(sc.Text())
		if m == nil || m[4] != client || m[3] == "DESTROY" {
			continue
		}
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		usec, _ := strconv.ParseInt((m[2] + "000000")[:6], 10, 64)
		at := time.Unix(sec, usec*1000)
		if at.Before(from) || at.After(to) {
			continue
		}
		pod, state := r.stateAt(m[6], at)
		count[key{m[6], state, pod}]++
		if state != "ready" && len(firstLost) < 5 {
			firstLost = append(firstLost, fmt.Sprintf("%s %s sport=%s -> %s (%s, %s)", at.UTC().Format("15:04:05.000000"), m[3], m[5], m[6], pod, state))
		}
	}
	var rows []string
	for k, n := range count {
		rows = append(rows, fmt.Sprintf("%5d to %s %s: %s", n, k.ip, k.pod, k.state))
	}
	sort.Strings(rows)
	out := strings.Join(rows, "\n")
	if len(firstLost) > 0 {
		out += "\nfirst of them to a Pod not ready:\n" + strings.Join(firstLost, "\n")
	}
	if overrun > 0 {
		out += fmt.Sprintf("\n(conntrack could not keep up %d times: events are missing)", overrun)
	}
	return out
}

// timeline is the EndpointSlice changes of kube-dns from from to to.
func (r *dnsRecord) timeline(from, to time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lines []string
	for _, c := range r.slices {
		if !c.at.Before(from) && !c.at.After(to) {
			lines = append(lines, fmt.Sprintf("%s %s %s %s", c.at.UTC().Format("15:04:05.000"), c.ip, c.pod, c.state))
		}
	}
	return strings.Join(lines, "\n")
}
