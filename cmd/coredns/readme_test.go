package main

import (
	"bufio"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/test"
)

// TestReadme starts every Corefile example in README.md with the CoreDNS built here.
func TestReadme(t *testing.T) {
	examples := corefiles(t, "../../README.md")
	if len(examples) < 3 {
		t.Fatalf("found %d corefile examples in README.md, want at least 3", len(examples))
	}
	caddy.Quiet, dnsserver.Quiet = true, true
	for i, corefile := range examples {
		_, port, _ := net.SplitHostPort(freePort(t))
		dnsserver.Port = port
		srv, err := caddy.Start(test.NewInput(withoutCluster(corefile)))
		if err != nil {
			t.Errorf("example %d does not start: %v\n%s", i+1, err, corefile)
			continue
		}
		srv.Stop()
		srv.ShutdownCallbacks()
	}
	dnsserver.Port = dnsserver.DefaultPort
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
