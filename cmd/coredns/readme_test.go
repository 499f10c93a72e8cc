package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadme starts every Corefile example in README.md with the CoreDNS built here, each
// in a process of its own, as an operator would: one process per Corefile, like a real start.
func TestReadme(t *testing.T) {
	examples := corefiles(t, "../../README.md")
	if len(examples) < 3 {
		t.Fatalf("found %d corefile examples in README.md, want at least 3", len(examples))
	}
	for i, corefile := range examples {
		t.Run(strconv.Itoa(i+1), func(t *testing.T) {
			t.Parallel()
			conf := filepath.Join(t.TempDir(), "Corefile")
			_, port, _ := net.SplitHostPort(freePort(t))
			if err := os.WriteFile(conf, []byte(onFreePorts(withoutCluster(corefile), port)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := startCoreDNS(t, "-conf", conf, "-dns.port", port)
			if err != nil {
				t.Fatalf("example %d does not start: %v\n%s", i+1, err, corefile)
			}
			// Every example guards the cluster zone, given or found in its block.
			if !strings.Contains(out, "[INFO] plugin/nsguard: guarding cluster.local. in mode") {
				t.Errorf("example %d does not say it guards cluster.local.:\n%s", i+1, out)
			}
		})
	}
}

// startCoreDNS runs this test binary as CoreDNS (see TestMain) until it reports that it
// serves, and returns what it printed until then.
func startCoreDNS(t *testing.T, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsCoreDNS+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	var out strings.Builder
	for s := bufio.NewScanner(stdout); s.Scan(); {
		out.WriteString(s.Text() + "\n")
		if strings.HasPrefix(s.Text(), "CoreDNS-") {
			cmd.Process.Kill()
			cmd.Wait()
			return out.String(), nil // printed once every server is up
		}
	}
	// Wait before reading stderr: exec copies into it until the process is reaped.
	cmd.Wait()
	return out.String(), fmt.Errorf("exited before serving: %s", stderr.String())
}

// corefiles returns the blocks fenced with "~~~ corefile", as CoreDNS's own README test reads them.
func corefiles(t *testing.T, readme string) []string {
	f, err := os.Open(readme)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var b strings.Builder
	in := false
	for s := bufio.NewScanner(f); s.Scan(); {
		switch line := s.Text(); {
		case line == "~~~ corefile":
			in = true
		case in && line == "~~~":
			out = append(out, b.String())
			b.Reset()
			in = false
		case in:
			b.WriteString(line + "\n")
		}
	}
	return out
}

var (
	port53    = regexp.MustCompile(`(?m)^(\S+):53 \{$`)
	listeners = regexp.MustCompile(`(?m)^(\s*)(prometheus|health|ready)( :\d+)?( \{)?$`)
)

// onFreePorts moves what the examples bind on fixed ports (a ".:53" block, prometheus on
// :9153, health and ready) to ports of the test's own: the examples run side by side, and
// beside the end-to-end suite, which binds port 53.
func onFreePorts(corefile, port string) string {
	corefile = port53.ReplaceAllString(corefile, "$1:"+port+" {")
	return listeners.ReplaceAllString(corefile, "$1$2 127.0.0.1:0$4")
}

var clusterPlugin = regexp.MustCompile(`^(\s*)(kubernetes|nsguard)\b[^{]*?( \{)?$`)

// withoutCluster points the kubernetes and nsguard plugins at a closed port, as if they ran
// in a cluster whose API server is away: there is none in a unit test, and both serve
// anyway after their bounded wait for sync. A block that names its API server keeps it.
func withoutCluster(corefile string) string {
	lines := strings.Split(corefile, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		m := clusterPlugin.FindStringSubmatch(lines[i])
		if m == nil {
			out = append(out, lines[i])
			continue
		}
		indent, endpoint := m[1], m[1]+"    endpoint http://127.0.0.1:1"
		if m[3] == "" {
			out = append(out, lines[i]+" {", endpoint, indent+"}")
			continue
		}
		end := i + 1
		for end < len(lines) && lines[end] != indent+"}" {
			end++
		}
		block := strings.Join(lines[i:end], "\n")
		out = append(out, lines[i])
		if !strings.Contains(block, "endpoint ") && !strings.Contains(block, "kubeconfig ") {
			out = append(out, endpoint)
		}
	}
	return strings.Join(out, "\n")
}

func TestOnFreePorts(t *testing.T) {
	in := ".:53 {\n    health {\n       lameduck 5s\n    }\n    ready\n    prometheus :9153\n    forward . /etc/resolv.conf\n}\n"
	want := ".:1053 {\n    health 127.0.0.1:0 {\n       lameduck 5s\n    }\n    ready 127.0.0.1:0\n    prometheus 127.0.0.1:0\n    forward . /etc/resolv.conf\n}\n"
	if got := onFreePorts(in, "1053"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWithoutCluster(t *testing.T) {
	tests := []struct{ in, want string }{
		{"    kubernetes cluster.local\n", "    kubernetes cluster.local {\n        endpoint http://127.0.0.1:1\n    }\n"},
		{"    kubernetes cluster.local {\n        pods verified\n    }\n", "    kubernetes cluster.local {\n        endpoint http://127.0.0.1:1\n        pods verified\n    }\n"},
		{"    forward . 10.96.0.10\n", "    forward . 10.96.0.10\n"},
		{"    nsguard\n    kubernetes cluster.local\n", "    nsguard {\n        endpoint http://127.0.0.1:1\n    }\n    kubernetes cluster.local {\n        endpoint http://127.0.0.1:1\n    }\n"},
		{"    nsguard {\n        endpoint http://10.0.0.1\n    }\n", "    nsguard {\n        endpoint http://10.0.0.1\n    }\n"},
	}
	for _, tc := range tests {
		if got := withoutCluster(tc.in); got != tc.want {
			t.Errorf("withoutCluster(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A bare nsguard in a block that serves the root without a kubernetes plugin has no
// cluster zone to guard: CoreDNS must not start, and must say what to write.
func TestNoClusterZone(t *testing.T) {
	_, port, _ := net.SplitHostPort(freePort(t))
	conf := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(conf, []byte(".:"+port+" {\n    nsguard\n    forward . 127.0.0.1:1\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := startCoreDNS(t, "-conf", conf)
	if err == nil || !strings.Contains(err.Error(), `plugin/nsguard: no cluster zone to guard in server block ".:`+port+`"`) ||
		!strings.Contains(err.Error(), `name the cluster zone, as in "nsguard cluster.local"`) {
		t.Errorf("got %v, want a start-up error that says what to write", err)
	}
}
