package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

const fixtures = "../../audit/testdata/"

func runCLI(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
		err  string // substring of stderr
	}{
		{"incident", []string{"audit", "-f", fixtures + "incident.yaml"}, 1, ""},
		{"near misses", []string{"audit", "-f", fixtures + "broad/near-misses.yaml"}, 0, ""},
		{"warnings under fail-on error", []string{"audit", "--fail-on", "error", "-f", fixtures + "broad/reserved.json"}, 1, ""},
		{"errors under fail-on error", []string{"audit", "--fail-on=error", "-f", fixtures + "broad/aliases.yaml"}, 1, ""},
		{"fail-on none", []string{"audit", "--fail-on", "none", "-f", fixtures + "incident.yaml"}, 0, ""},
		{"malformed", []string{"audit", "-f", fixtures + "bad/bad.yaml"}, 2, "bad/bad.yaml: document 2: Service"},
		{"malformed in a directory", []string{"audit", "-f", fixtures}, 2, "document"},
		{"bad output", []string{"audit", "-o", "xml", "-f", fixtures + "incident.yaml"}, 2, `--output "xml"`},
		{"bad fail-on", []string{"audit", "--fail-on", "fatal"}, 2, `--fail-on "fatal"`},
		{"unknown flag", []string{"audit", "--bogus"}, 2, "bogus"},
		{"stray argument", []string{"audit", "incident.yaml"}, 2, `got "incident.yaml"`},
		{"files and kubeconfig", []string{"audit", "-f", "x", "--kubeconfig", "y"}, 2, "cannot be combined with --kubeconfig"},
		{"files and a kubectl flag", []string{"explain", "my-app", "-n", "a", "-f", "x", "--server", "https://127.0.0.1:1"}, 2, "cannot be combined with --server"},
		{"kubectl's --server", []string{"audit", "--server", "https://127.0.0.1:1", "--kubeconfig", "/dev/null", "--request-timeout", "5s"}, 2, "127.0.0.1:1"},
		{"kubectl's --request-timeout checked", []string{"audit", "--kubeconfig", "/dev/null", "--request-timeout", "soon"}, 2, `--request-timeout "soon": want a duration`},
		{"unknown command", []string{"check"}, 2, `unknown command "check"`},
		{"no command", nil, 2, "Usage"},
		{"explain without from", []string{"explain", "my-app", "-f", fixtures + "incident.yaml"}, 2, "-n NAMESPACE (or --from) is required"},
		{"explain -n and --from differ", []string{"explain", "my-app", "-n", "a", "--from", "b"}, 2, `-n "a" and --from "b"`},
		{"explain bad ndots", []string{"explain", "my-app", "--from", "a", "--ndots", "-1"}, 2, "--ndots -1"},
		{"explain bad mode", []string{"explain", "my-app", "--from", "a", "--mode", "deny"}, 2, `--mode "deny": want log or refuse`},
		{"explain bad rcode", []string{"explain", "my-app", "--from", "a", "--mode", "refuse", "--rcode", "SERVFAIL"}, 2, `--rcode "SERVFAIL": want NXDOMAIN or REFUSED`},
		{"explain rcode in mode log", []string{"explain", "my-app", "--from", "a", "--rcode", "REFUSED"}, 2, "--rcode REFUSED: only with --mode refuse"},
		{"explain bad name", []string{"explain", "my_app!", "--from", "a"}, 2, `label "my_app!"`},
		{"explain trap", []string{"explain", "my-app", "--from", "new-namespace-1", "-f", fixtures + "incident.yaml"}, 1, ""},
		{"explain fine", []string{"explain", "--from", "new-namespace-2", "my-app", "-f", fixtures + "incident.yaml"}, 0, ""},
		{"missing file", []string{"audit", "-f", fixtures + "nope.yaml"}, 2, "nope.yaml"},
		{"help", []string{"audit", "-h"}, 0, ""},
		// The Go flag spellings nsguard took before: a clear error, not -o utput.
		{"old -output", []string{"audit", "-output", "json"}, 2, "-output: flags take two dashes now, as in kubectl: use --output"},
		{"old -from=", []string{"explain", "my-app", "-from=a"}, 2, "use --from=a"},
		{"old -kubeconfig", []string{"audit", "-kubeconfig", "x"}, 2, "use --kubeconfig"},
		{"old -fail-on", []string{"audit", "-fail-on", "none"}, 2, "use --fail-on"},
		{"unknown shorthand", []string{"audit", "-x"}, 2, "unknown shorthand flag: 'x'"},
		{"bad audit namespace", []string{"audit", "-n", "Not_A_Namespace", "-f", fixtures + "incident.yaml"}, 2, `--namespace "Not_A_Namespace"`},
		// Values that once passed unchecked: a typo must fail a CI gate, not pass it.
		{"bad offenders namespace", []string{"offenders", "-n", "Bad_NS", "/dev/null"}, 2, `--namespace "Bad_NS": not a namespace name`},
		{"offenders namespace with a pod", []string{"offenders", "-n", "a/web", "/dev/null"}, 2, `--namespace "a/web": not a namespace name`},
		{"bad search domain", []string{"explain", "my-app", "-n", "a", "-f", fixtures + "incident.yaml", "--search", "bad..domain"}, 2, `--search domain "bad..domain": empty label`},
		{"bad search domain among good ones", []string{"explain", "my-app", "-n", "a", "-f", fixtures + "incident.yaml", "--search", "a.svc.cluster.local -x.local"}, 2, `--search domain "-x.local": label "-x" starts or ends with '-'`},
		{"root as a search domain", []string{"explain", "my-app", "-n", "a", "-f", fixtures + "incident.yaml", "--search", "."}, 2, `--search domain ".": empty name`},
		{"explain zone -", []string{"explain", "my-app", "-n", "a", "-f", fixtures + "incident.yaml", "--zone", "-"}, 2, `--zone "-": label "-" starts or ends with '-'`},
		{"audit zone -", []string{"audit", "-f", fixtures + "incident.yaml", "--zone", "-"}, 2, `--zone "-": label "-" starts or ends with '-'`},
		{"offenders namespace in upper case", []string{"offenders", "-n", "New-Namespace-1", kubectlLog}, 1, ""},
		{"audit namespace in upper case", []string{"audit", "-n", "New-Namespace-1", "-f", fixtures + "incident.yaml"}, 1, ""},
		{"zone with an empty label", []string{"audit", "-f", fixtures + "incident.yaml", "--zone", "cluster..local"}, 2, `--zone "cluster..local": empty label`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI("", tt.args...)
			if code != tt.want || !strings.Contains(errs, tt.err) {
				t.Errorf("exit %d, want %d; stderr %q, want it to hold %q\nstdout:\n%s", code, tt.want, errs, tt.err, out)
			}
		})
	}
}

func TestWarningsBelowFailOn(t *testing.T) {
	// Namespace com with a Service in it: "google.com" typed in any pod reaches that Service first.
	com := "apiVersion: v1\nkind: Namespace\nmetadata: {name: com}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: google, namespace: com}\nspec: {type: ExternalName, externalName: evil.example.net}\n"
	if code, out, _ := runCLI(com, "audit", "--fail-on", "error", "-f", "-"); code != 0 || !strings.Contains(out, "WARNING  reserved-namespace") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if code, _, _ := runCLI(com, "audit", "-f", "-"); code != 1 {
		t.Errorf("default --fail-on warning: exit %d", code)
	}
	empty := "apiVersion: v1\nkind: Namespace\nmetadata: {name: dev}\n"
	if code, out, _ := runCLI(empty, "audit", "-f", "-"); code != 0 || !strings.Contains(out, "INFO     reserved-namespace") {
		t.Errorf("an empty namespace named like a TLD is for information only: exit %d:\n%s", code, out)
	}
}

func TestTableOutput(t *testing.T) {
	_, out, _ := runCLI("", "audit", "-f", fixtures+"incident.yaml")
	for _, want := range []string{
		"ERROR    namespace-captures-service",
		"clients:  every namespace except new-namespace-2",
		"coredns:  my-app.svc.cluster.local. A -> NODATA",
		"kube-dns: my-app.svc.cluster.local. A -> NOERROR one CNAME to other-app-1.legacy-a.svc.cluster.local. or other-app-2.legacy-a.svc.cluster.local., A 10.96.0.31, A 10.96.0.32, in random order",
		"fix:      Service my-app exists in new-namespace-2; use my-app.new-namespace-2, or create an ExternalName Service my-app in the client's namespace pointing at my-app.new-namespace-2.svc.cluster.local;",
		"1 findings: 1 error, 0 warning, 0 info",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestJSONOutputFromStdin(t *testing.T) {
	manifest := `apiVersion: v1
kind: Namespace
metadata: {name: svc}
`
	code, out, errs := runCLI(manifest, "audit", "-o", "json", "-f", "-")
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Version  int
		Zone     string
		Summary  map[string]int
		Findings []struct {
			Check, Severity string
			Objects         []struct{ Kind, Name, Source string }
			Clients         struct{ Scope string }
			Fix             string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 2 || doc.Zone != "cluster.local" || doc.Summary["error"] != 1 || len(doc.Findings) != 1 {
		t.Fatalf("%+v", doc)
	}
	f := doc.Findings[0]
	if f.Check != "reserved-namespace" || f.Severity != "error" || f.Objects[0].Source != "<stdin>: document 1" || f.Clients.Scope != "all" || f.Fix == "" {
		t.Errorf("%+v", f)
	}
	_, out, _ = runCLI("", "audit", "-o", "json", "-f", fixtures+"broad/near-misses.yaml")
	if !strings.Contains(out, `"findings": []`) {
		t.Errorf("no findings must be an empty list:\n%s", out)
	}
}

func TestGitHubOutput(t *testing.T) {
	_, out, _ := runCLI("", "audit", "-o", "github", "-f", fixtures+"incident.yaml", "-f", fixtures+"broad/reserved.json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{
		"::error file=" + fixtures + "incident.yaml,title=nsguard namespace-captures-service::namespace my-app captures",
		"::warning file=" + fixtures + "broad/reserved.json,title=nsguard ",
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], want[0]) || !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, want[1]) }) {
		t.Errorf("got:\n%s", out)
	}
	for _, l := range lines {
		if strings.Count(l, "::") != 2 {
			t.Errorf("unescaped line %q", l)
		}
	}
}

func TestExplainOutput(t *testing.T) {
	_, out, _ := runCLI("", "explain", "my-app", "--from", "new-namespace-1", "-f", fixtures+"incident.yaml")
	for _, want := range []string{
		"most likely meant: Service my-app in new-namespace-2",
		"2  my-app.svc.cluster.local.",
		"NODATA  <- musl stops",
		"<- wins (wrong)",
		"coredns:  candidate 4 (my-app.) goes upstream: NOT what my-app most likely meant",
		"glibc          candidate 4: the upstream's answer (wrong)  candidate 2: 10.96.0.31 or 10.96.0.32, or fails (wrong)",
		"musl           candidate 2: fails",
		"go             candidate 4: the upstream's answer (wrong)  candidate 2: 10.96.0.31 10.96.0.32 (wrong)",
		"c-ares 1.18.1  candidate 4: the upstream's answer (wrong)  candidate 2: 10.96.0.31 or 10.96.0.32 (wrong), or on to candidate 4: the upstream's answer (wrong)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	// REFUSED stops glibc, musl and c-ares at the namespace apex; only Go goes on.
	_, out, _ = runCLI("", "explain", "my-app", "--from", "new-namespace-1", "--mode", "refuse", "--rcode", "REFUSED", "-f", fixtures+"incident.yaml")
	for _, want := range []string{
		"nsguard in mode refuse answers REFUSED for a namespace apex",
		"REFUSED  <- glibc, musl, c-ares stop",
		"glibc, musl and c-ares stop at candidate 2 (REFUSED) and fail",
		"c-ares 1.18.1  candidate 2: fails",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain --mode refuse --rcode REFUSED lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = runCLI("", "explain", "my-app", "--from", "x", "--ndots", "0", "--search", "a.b", "-o", "json", "-f", fixtures+"incident.yaml")
	var e struct {
		Candidates []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil || len(e.Candidates) != 2 || e.Candidates[0].Name != "my-app." {
		t.Errorf("ndots 0: %v %s", err, out)
	}
}

// TestKubectlFlags: the spellings kubectl users type, each giving what the old one gave.
func TestKubectlFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		want      int
		stdout    string // substring
		notStdout string
	}{
		{"--filename", []string{"audit", "--filename", fixtures + "incident.yaml"}, 1, "namespace-captures-service", ""},
		{"-f=", []string{"audit", "-f=" + fixtures + "incident.yaml"}, 1, "namespace-captures-service", ""},
		{"--output=json", []string{"audit", "--output=json", "-f", fixtures + "incident.yaml"}, 1, `"version": 2`, ""},
		{"-ojson", []string{"audit", "-ojson", "-f", fixtures + "incident.yaml"}, 1, `"version": 2`, ""},
		{"-n a client namespace", []string{"audit", "-n", "new-namespace-1", "-f", fixtures + "incident.yaml"}, 1, "namespace-captures-service", ""},
		{"-n the only namespace spared", []string{"audit", "-n", "new-namespace-2", "-f", fixtures + "incident.yaml"}, 0, "no findings", ""},
		{"explain -n", []string{"explain", "my-app", "-n", "new-namespace-1", "-f", fixtures + "incident.yaml"}, 1, "my-app from namespace new-namespace-1", ""},
		{"explain --namespace=", []string{"explain", "--namespace=new-namespace-2", "my-app", "-f", fixtures + "incident.yaml"}, 0, "from namespace new-namespace-2", ""},
		{"offenders -n", []string{"offenders", "-n", "new-namespace-1", kubectlLog}, 1, "2 rows, ", "10.0.0.12"},
		{"offenders -n none", []string{"offenders", "-n", "elsewhere", kubectlLog}, 0, "no answers through", ""},
		{"help on stdout", []string{"offenders", "--help"}, 0, "-o, --output", ""},
		{"root help", []string{"--help"}, 0, "kubectl nsguard", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI("", tt.args...)
			if code != tt.want || !strings.Contains(out, tt.stdout) || tt.notStdout != "" && strings.Contains(out, tt.notStdout) {
				t.Errorf("exit %d, want %d; stdout lacks %q or holds %q; stderr %s\n%s", code, tt.want, tt.stdout, tt.notStdout, errs, out)
			}
		})
	}
}
