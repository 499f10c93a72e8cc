//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// eventInterval is short, so that the test sees a second interval.
const eventInterval = 4 * time.Second

// apexEvents lists nsguard's Events on the client Pod for the namespace my-app.
func apexEvents(t *testing.T) []eventsv1.Event {
	t.Helper()
	list, err := env.cp.Clientset().EventsV1().Events(cluster.ClientNamespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == "Pod" && e.Regarding.Name == cluster.ClientPod && e.Reason == "DNSNameThroughNamespace" && e.Action == "Resolve my-app" {
			out = append(out, e)
		}
	}
	return out
}

// The app team hears of it where it looks: a Warning Event on its Pod, through the real API
// server, once per interval and then as a series; kubectl describe pod shows it.
func TestEvents(t *testing.T) {
	p := startDNS(t, "127.53.1.60", coredns.Config{NSGuard: withView("events " + eventInterval.String())})
	p.waitSynced(t)
	started := time.Now()
	p.expect(t, "my-app", trapped)
	p.expect(t, "my-app", trapped)

	var events []eventsv1.Event
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, false, func(context.Context) (bool, error) {
		events = apexEvents(t)
		return len(events) > 0, nil
	}); err != nil {
		t.Fatal("no Event on the client Pod")
	}
	if time.Since(started) < eventInterval {
		if len(events) != 1 || events[0].Series != nil {
			t.Fatalf("within one interval: %d Events, series %v; want one Event", len(events), events[0].Series)
		}
	}
	e := events[0]
	if e.Type != "Warning" || e.Regarding.Namespace != cluster.ClientNamespace || e.Regarding.UID == "" ||
		!strings.Contains(e.Note, `what the search list makes of "my-app", was answered through namespace my-app`) ||
		!strings.Contains(e.Note, "Fix: no Service my-app in new-namespace-1; Service my-app exists in new-namespace-2") {
		t.Errorf("Event %+v", e)
	}
	out, err := env.cp.Kubectl(t.Context(), "describe", "pod", cluster.ClientPod, "-n", cluster.ClientNamespace)
	if err != nil || !bytes.Contains(out, []byte("DNSNameThroughNamespace")) {
		t.Errorf("kubectl describe pod does not show the Event: %v\n%s", err, out)
	}

	// The next interval: Kubernetes makes a series of it.
	time.Sleep(time.Until(started.Add(eventInterval + time.Second)))
	p.expect(t, "my-app", trapped)
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		events = apexEvents(t)
		return len(events) == 1 && events[0].Series != nil && events[0].Series.Count >= 2, nil
	}); err != nil {
		t.Fatalf("after a second interval: %d Events, want one with a series: %+v", len(events), events)
	}

	// The counter says which namespace still depends on the trap.
	body, err := p.dns.Scrape()
	if err != nil {
		t.Fatal(err)
	}
	if coredns.Sum(body, apexMetric, "action=logged", "answer=nodata", "client_namespace=new-namespace-1") == 0 {
		t.Errorf("no apex counter with client_namespace=\"new-namespace-1\":\n%s", body)
	}
}

// With the API server away, answers do not change, and the Events are dropped and counted.
func TestEventsAPIServerAway(t *testing.T) {
	p := startDNS(t, "127.53.1.61", coredns.Config{NSGuard: withView("events " + eventInterval.String())})
	p.waitSynced(t)
	env.cp.StopAPIServer()
	t.Cleanup(func() {
		if err := env.cp.RestartAPIServer(context.Background()); err != nil {
			t.Errorf("restarting the API server: %v", err)
		}
	})
	time.Sleep(3 * time.Second) // long enough for the watches to fail
	if res := p.ask(t, apex, dns.TypeA); !isNoData(res) {
		t.Errorf("the apex gave %v with the API server away, want NODATA as before", res)
	}
	p.expect(t, "my-app", trapped)
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return metric(t, p, "coredns_nsguard_events_dropped_total", "reason=unreachable") != 0, nil
	}); err != nil {
		t.Fatal("no Event counted as dropped while the API server was away")
	}
}

// nsguard offenders reads the log a real CoreDNS wrote, and counts every answer.
func TestOffendersFromRealLog(t *testing.T) {
	p := startDNS(t, "127.53.1.62", coredns.Config{NSGuard: withView("log_interval 100ms")})
	p.waitSynced(t)
	for range 3 {
		p.expect(t, "my-app", trapped)
	}
	// Answers held back as repeats are told in the next line for the same client and
	// question: ask each once more after the interval, so that every answer is in a line.
	time.Sleep(200 * time.Millisecond)
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		p.ask(t, cluster.LegacyNamespace+".svc.cluster.local.", qtype)
	}
	time.Sleep(500 * time.Millisecond) // the last line is written after the answer
	logFile := filepath.Join(t.TempDir(), "coredns.log")
	if err := os.WriteFile(logFile, []byte(p.dns.Log()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), nsguardCLI(t), "offenders", "-o", "json", logFile).Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("nsguard offenders: %v, want exit status 1 (offenders)\n%s", err, out)
	}
	var report struct {
		Rows []struct {
			Pod, Namespace, Typed string
			Count                 float64
		}
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	answers := p.apexAnswers(t)["logged/nodata"]
	if len(report.Rows) != 1 || report.Rows[0].Pod != cluster.ClientNamespace+"/"+cluster.ClientPod ||
		report.Rows[0].Namespace != cluster.ClientNamespace || report.Rows[0].Typed != "my-app" || report.Rows[0].Count != answers {
		t.Errorf("offenders %+v, want one row for the client and my-app counting all %v answers", report.Rows, answers)
	}
}
