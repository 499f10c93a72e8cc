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

var kubernetesLine = regexp.MustCompile(`(?m)^(\s*kubernetes[^{\n]*?)( \{)?$`)

// withoutCluster points the kubernetes plugin at a closed port: there is no cluster in a unit
// test, and the plugin serves anyway after its bounded wait for sync.
func withoutCluster(corefile string) string {
	return kubernetesLine.ReplaceAllStringFunc(corefile, func(line string) string {
		const endpoint = "\n        endpoint http://127.0.0.1:1"
		if strings.HasSuffix(line, "{") {
			return line + endpoint
		}
		return line + " {" + endpoint + "\n    }"
	})
}

func TestWithoutCluster(t *testing.T) {
	tests := []struct{ in, want string }{
		{"    kubernetes cluster.local\n", "    kubernetes cluster.local {\n        endpoint http://127.0.0.1:1\n    }\n"},
		{"    kubernetes cluster.local {\n        pods verified\n    }\n", "    kubernetes cluster.local {\n        endpoint http://127.0.0.1:1\n        pods verified\n    }\n"},
		{"    forward . 10.96.0.10\n", "    forward . 10.96.0.10\n"},
	}
	for _, tc := range tests {
		if got := withoutCluster(tc.in); got != tc.want {
			t.Errorf("withoutCluster(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
