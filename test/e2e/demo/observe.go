package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/nsguard/nsguard/audit/model"
	"github.com/nsguard/nsguard/logline"
	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
	"github.com/nsguard/nsguard/test/e2e/resolvers"
)

// timed runs a build quietly; only one that takes long says it is still at work.
func (d *demo) timed(what string, build func() error) error {
	start := time.Now()
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				d.say("... still building %s (%s so far)", what, time.Since(start).Round(time.Second))
			}
		}
	}()
	err := build()
	close(done)
	if err != nil {
		return err
	}
	if took := time.Since(start); took > 3*time.Second {
		d.say("%-40s built in %s", what, took.Round(time.Second))
	} else {
		d.say("%-40s ready", what)
	}
	return nil
}

var kindLabel = map[resolvers.Kind]string{
	resolvers.Glibc: "glibc (Debian, Ubuntu, most images)",
	resolvers.Musl:  "musl (Alpine)",
	resolvers.Go:    "Go (its own resolver)",
	resolvers.CAres: "c-ares " + model.CAresVersion + " (Envoy, gRPC, curl)",
}

// lookupAll resolves name from the client pod's view with every resolver and prints the results.
func (d *demo) lookupAll(name string) (map[resolvers.Kind]resolvers.Result, error) {
	res := map[resolvers.Kind]resolvers.Result{}
	for _, k := range resolvers.Kinds {
		ctx, cancel := context.WithTimeout(d.ctx, 30*time.Second)
		r, err := d.clients.Lookup(ctx, k, d.resolvConf, name)
		cancel()
		if err != nil {
			return nil, err
		}
		res[k] = r
		d.show(fmt.Sprintf("%-38s %s", kindLabel[k], result(r)))
	}
	return res, nil
}

// expect checks that each of kinds resolved to exactly addr.
func expect(res map[resolvers.Kind]resolvers.Result, kinds []resolvers.Kind, addr string) error {
	for _, k := range kinds {
		if r := res[k]; !slices.Equal(r.Addrs, []string{addr}) {
			return fmt.Errorf("expected %v to get %s, it got %s", k, named(addr), result(r))
		}
	}
	return nil
}

func result(r resolvers.Result) string {
	if !r.OK() {
		return "lookup failed: " + r.Err
	}
	out := make([]string, len(r.Addrs))
	for i, a := range r.Addrs {
		out[i] = named(a)
	}
	return strings.Join(out, ", ")
}

// named says whose address it is.
func named(addr string) string {
	switch addr {
	case coredns.CorpIP:
		return addr + " (my-app.corp.example)"
	case cluster.AppClusterIP:
		return addr + " (Service my-app in new-namespace-2)"
	case cluster.OtherApp1IP:
		return addr + " (other-app-1, a wrong app)"
	case cluster.OtherApp2IP:
		return addr + " (other-app-2, a wrong app)"
	}
	return addr
}

// waitAnswer asks name until ok accepts the answer or timeout passes.
func (d *demo) waitAnswer(name string, qtype uint16, timeout time.Duration, ok func(*dns.Msg) bool) (*dns.Msg, error) {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(d.ctx, 2*time.Second)
		m, err := resolvers.Query(ctx, dnsIP+":53", name, qtype)
		cancel()
		if err == nil && ok(m) {
			return m, nil
		}
		if time.Now().After(deadline) || d.ctx.Err() != nil {
			if err != nil {
				return nil, fmt.Errorf("after %s: %v", timeout, err)
			}
			return nil, fmt.Errorf("after %s the answer is still %s", timeout, brief(m))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func hasA(ip string) func(*dns.Msg) bool {
	return func(m *dns.Msg) bool {
		for _, rr := range m.Answer {
			if a, ok := rr.(*dns.A); ok && a.A.String() == ip {
				return true
			}
		}
		return false
	}
}

func isRcode(rcode int) func(*dns.Msg) bool {
	return func(m *dns.Msg) bool { return m.Rcode == rcode }
}

func isNoData(m *dns.Msg) bool { return m.Rcode == dns.RcodeSuccess && len(m.Answer) == 0 }

// brief renders an answer as dig's summary would: rcode, then the records.
func brief(m *dns.Msg) string {
	if m.Rcode != dns.RcodeSuccess {
		return dns.RcodeToString[m.Rcode]
	}
	if len(m.Answer) == 0 {
		return "NOERROR, no records"
	}
	var rrs []string
	for _, rr := range m.Answer {
		switch v := rr.(type) {
		case *dns.A:
			rrs = append(rrs, "A "+v.A.String())
		case *dns.CNAME:
			rrs = append(rrs, "CNAME "+v.Target)
		default:
			rrs = append(rrs, strings.Join(strings.Fields(rr.String()), " "))
		}
	}
	return strings.Join(rrs, ", ")
}

// waitLogs waits for an nsguard line about namespace my-app with want in it, in the log
// after mark, and returns all nsguard lines there.
func (d *demo) waitLogs(mark int, want string) ([]string, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		lines := nsguardLines(d.dns.Log()[mark:])
		for _, l := range lines {
			if strings.Contains(l, `answer through namespace "my-app"`) && strings.Contains(l, `typed="my-app"`) && strings.Contains(l, want) {
				return lines, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("expected an nsguard log line about namespace my-app with %s, got:\n%s", want, strings.Join(lines, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func nsguardLines(log string) []string {
	var out []string
	for l := range strings.Lines(log) {
		if strings.Contains(l, "plugin/nsguard") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// splitFindings tells the lines about answers from the live findings' lines, which come
// from the cluster's state, whoever asks.
func splitFindings(lines []string) (answers, findings []string) {
	for _, l := range lines {
		if strings.Contains(l, logline.FindingSubject) {
			findings = append(findings, l)
		} else {
			answers = append(answers, l)
		}
	}
	return answers, findings
}

const apexMetric = "coredns_nsguard_namespace_apex_answers_total"

type apexCounts struct {
	lines []string
	total float64
}

func (d *demo) apexMetrics() (apexCounts, error) {
	page, err := d.dns.Scrape()
	if err != nil {
		return apexCounts{}, err
	}
	var c apexCounts
	for l := range strings.Lines(page) {
		if !strings.HasPrefix(l, apexMetric+"{") {
			continue
		}
		l = strings.TrimSpace(l)
		v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
		if err != nil {
			return apexCounts{}, fmt.Errorf("metric line %q: %v", l, err)
		}
		c.lines = append(c.lines, l)
		c.total += v
	}
	return c, nil
}

// get sums the samples with these answer and action labels.
func (c apexCounts) get(answer, action string) float64 {
	var sum float64
	for _, l := range c.lines {
		if strings.Contains(l, `answer="`+answer+`"`) && strings.Contains(l, `action="`+action+`"`) {
			v, _ := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			sum += v
		}
	}
	return sum
}

// clusterBlock is the Corefile's first server block, the one nsguard is in.
func clusterBlock(corefile string) string {
	if i := strings.Index(corefile, "\n}\n"); i >= 0 {
		return corefile[:i+2]
	}
	return corefile
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func mkdir(dir string) error { return os.MkdirAll(dir, 0o755) }
