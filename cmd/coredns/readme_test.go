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
			if err := os.WriteFile(conf, []byte(withoutCluster(corefile)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, port, _ := net.SplitHostPort(freePort(t))
			if err := startCoreDNS(t, "-conf", conf, "-dns.port", port); err != nil {
				t.Errorf("example %d does not start: %v\n%s", i+1, err, corefile)
			}
		})
	}
}

// startCoreDNS runs this test binary as CoreDNS (see TestMain) until it reports that it serves.
func startCoreDNS(t *testing.T, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsCoreDNS+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	for s := bufio.NewScanner(stdout); s.Scan(); {
		if strings.HasPrefix(s.Text(), "CoreDNS-") {
			return nil // printed once every server is up
		}
	}
	return fmt.Errorf("exited before serving: %s", stderr.String())
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
