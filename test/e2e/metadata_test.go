//go:build e2e

package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dnstap "github.com/dnstap/golang-dnstap"
	"github.com/miekg/dns"
	"google.golang.org/protobuf/proto"

	"github.com/nsguard/nsguard/logline"
	"github.com/nsguard/nsguard/test/e2e/cluster"
	"github.com/nsguard/nsguard/test/e2e/coredns"
)

// queryLogFormat is the log plugin's format with nsguard's metadata.
const queryLogFormat = `{name} {rcode} nsguard={/nsguard/action} kind={/nsguard/kind} typed={/nsguard/typed} pod={/nsguard/client-pod} ns={/nsguard/client-namespace}`

// TestMetadataInQueryLogAndDnstap: with metadata in the block, the real log plugin prints
// nsguard's verdict on a held query and "-" on others, and the real dnstap plugin carries it in
// the extra field of the response it taps, read back from its socket by golang-dnstap's
// Frame Streams reader.
func TestMetadataInQueryLogAndDnstap(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "dnstap.sock")
	in, err := dnstap.NewFrameStreamSockInputFromPath(sock)
	if err != nil {
		t.Fatal(err)
	}
	in.SetTimeout(time.Minute)
	frames := make(chan []byte, 1024)
	go in.ReadInto(frames)

	if err := cluster.ApplyShadow(t.Context(), env.cp.Clientset()); err != nil {
		t.Fatal(err)
	}
	p := startDNS(t, "127.53.44.1", coredns.Config{
		Before: []string{"metadata", `log . "` + queryLogFormat + `"`,
			"dnstap unix://" + sock + " full {\n        extra \"{/nsguard/action} {/nsguard/kind} {/nsguard/typed} {/nsguard/client-namespace}/{/nsguard/client-pod}\"\n    }"},
		NSGuard: withView(),
	})
	p.waitSynced(t)
	p.ask(t, "my-app.svc.cluster.local.", dns.TypeA)
	p.ask(t, cluster.AppService+"."+cluster.AppNamespace+".svc.cluster.local.", dns.TypeA)
	shadow := cluster.ShadowService + "." + cluster.ShadowNamespace + "." + cluster.ClientNamespace + ".svc.cluster.local."
	p.ask(t, shadow, dns.TypeA)

	want := []string{
		shadow + " NOERROR nsguard=logged kind=endpoint shadow typed=" + cluster.ShadowService + "." + cluster.ShadowNamespace +
			" pod=client ns=" + cluster.ClientNamespace,
		"my-app.svc.cluster.local. NOERROR nsguard=logged kind=namespace typed=my-app pod=client ns=" + cluster.ClientNamespace,
		cluster.AppService + "." + cluster.AppNamespace + ".svc.cluster.local. NOERROR nsguard=- kind=- typed=- pod=- ns=-",
	}
	waitFor(t, 10*time.Second, "the query log lines", func() bool {
		for _, w := range want {
			if !strings.Contains(p.dns.Log(), w) {
				return false
			}
		}
		return true
	})
	for _, l := range strings.Split(p.dns.Log(), "\n") {
		if strings.Contains(l, "nsguard=") {
			t.Logf("query log: %s", l)
		}
	}

	held, service := "my-app.svc.cluster.local.", cluster.AppService+"."+cluster.AppNamespace+".svc.cluster.local."
	extras := map[string]string{} // qname of each client response → extra
	deadline := time.After(15 * time.Second)
	for extras[held] == "" || extras[service] == "" || extras[shadow] == "" {
		select {
		case f := <-frames:
			var d dnstap.Dnstap
			if err := proto.Unmarshal(f, &d); err != nil {
				t.Fatalf("a dnstap frame: %v", err)
			}
			m := d.GetMessage()
			if m.GetType() != dnstap.Message_CLIENT_RESPONSE {
				continue
			}
			var res dns.Msg
			if err := res.Unpack(m.GetResponseMessage()); err != nil || len(res.Question) != 1 {
				t.Fatalf("a tapped response: %v", err)
			}
			extras[res.Question[0].Name] = string(d.GetExtra())
			t.Logf("dnstap: %s extra=%q", res.Question[0].Name, d.GetExtra())
		case <-deadline:
			t.Fatalf("dnstap responses so far: %q", extras)
		}
	}
	if got, want := extras[held], "logged namespace my-app "+cluster.ClientNamespace+"/client"; got != want {
		t.Errorf("dnstap extra of the held answer %q, want %q", got, want)
	}
	if got, want := extras[shadow], "logged endpoint shadow "+cluster.ShadowService+"."+cluster.ShadowNamespace+" "+cluster.ClientNamespace+"/client"; got != want {
		t.Errorf("dnstap extra of the endpoint shadow %q, want %q", got, want)
	}
	if got := extras[service]; got != "- - - -/-" {
		t.Errorf("dnstap extra of a Service's answer %q, want nsguard's fields empty", got)
	}
}

// TestJSONLogRecords: under -log-format json, each kind of nsguard line is one JSON record of
// its level whose fields are the text line's keys, typed, and nsguard offenders reads them.
func TestJSONLogRecords(t *testing.T) {
	if err := cluster.ApplyShadow(t.Context(), env.cp.Clientset()); err != nil {
		t.Fatal(err)
	}
	kubeconfig, unbind := eventsServiceAccount(t)
	p := startDNS(t, "127.53.44.2", coredns.Config{Flags: []string{"-log-format", "json"},
		NSGuard: "nsguard {\n        kubeconfig " + kubeconfig + "\n        events 1h\n        namespace_events\n    }"})
	p.waitSynced(t)
	p.ask(t, "my-app.svc.cluster.local.", dns.TypeA)
	shadow := cluster.ShadowService + "." + cluster.ShadowNamespace + "." + cluster.ClientNamespace + ".svc.cluster.local."
	waitFor(t, 10*time.Second, "the shadow in the view", func() bool {
		p.ask(t, shadow, dns.TypeA)
		return strings.Contains(p.dns.Log(), `"msg":"endpoint shadows a Service`)
	})
	unbind()
	p.ask(t, cluster.OtherAppNamespace+".svc.cluster.local.", dns.TypeA)

	kinds := map[string]map[string]any{}
	waitFor(t, 20*time.Second, "a record of each line kind", func() bool {
		for _, l := range strings.Split(p.dns.Log(), "\n") {
			if !strings.Contains(l, `"plugin":"nsguard"`) {
				continue
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("not a JSON record: %v: %q", err, l)
			}
			msg, _ := rec["msg"].(string)
			for _, k := range []string{logline.ApexSubject, logline.ShadowSubject, logline.FindingSubject, "Event not recorded"} {
				if strings.HasPrefix(msg, k) && kinds[k] == nil {
					kinds[k] = rec
					t.Logf("%s", l)
				}
			}
		}
		return len(kinds) == 4
	})
	checks := []struct {
		kind, level string
		fields      map[string]any
	}{
		{logline.ApexSubject, "WARN", map[string]any{"client": clientPodIP, "pod": cluster.ClientNamespace + "/client",
			"typed": "my-app", "action": "logged", "question": "my-app.svc.cluster.local. A"}},
		{logline.ShadowSubject, "WARN", map[string]any{"typed": cluster.ShadowService + "." + cluster.ShadowNamespace, "action": "logged"}},
		{logline.FindingSubject, "", map[string]any{}},
		{"Event not recorded", "WARN", map[string]any{"reason": "forbidden", "counted_in": "events_dropped_total"}},
	}
	for _, c := range checks {
		rec := kinds[c.kind]
		if c.level != "" && rec["level"] != c.level {
			t.Errorf("%s: level %v, want %s", c.kind, rec["level"], c.level)
		}
		for k, v := range c.fields {
			if rec[k] != v {
				t.Errorf("%s: %s=%v, want %v", c.kind, k, rec[k], v)
			}
		}
		if c.kind == logline.FindingSubject {
			if _, ok := rec["check"].(string); !ok || rec["level"] != "WARN" && rec["level"] != "INFO" {
				t.Errorf("finding record without its check or level: %v", rec)
			}
		}
	}
	if strings.Contains(p.dns.Log(), "[WARNING] plugin/nsguard") {
		t.Errorf("a text line under -log-format json:\n%s", p.dns.Log())
	}

	// The real CLI, on the real JSON log.
	cmd := exec.Command(nsguardCLI(t), "offenders", "-o", "json")
	cmd.Stdin = strings.NewReader(p.dns.Log())
	out, _ := cmd.Output() // exits 1 when it finds offenders
	var r struct {
		Rows    []struct{ Typed, Kind string }
		Summary struct{ Broken, Lines int }
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("offenders: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, row := range r.Rows {
		seen[row.Typed+" "+row.Kind] = true
	}
	if r.Summary.Broken != 0 || !seen["my-app namespace"] || !seen[cluster.ShadowService+"."+cluster.ShadowNamespace+" endpoint shadow"] {
		t.Errorf("offenders on the JSON log: %s", out)
	}
}
