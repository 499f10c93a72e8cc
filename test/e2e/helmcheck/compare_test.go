package main

import (
	"strings"
	"testing"
)

// stock is the shape of the chart's rendered Corefile (its ConfigMap template's indentation).
const stock = `.:53 {
    errors
    health {
        lameduck 10s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
    }
    cache 30
}`

func TestOnlyNSGuard(t *testing.T) {
	withBlock := strings.Replace(stock, "    ready\n", "    ready\n    nsguard cluster.local {\n        mode log\n    }\n", 1)
	tests := []struct {
		name, guarded, block, err string
	}{
		{name: "block", guarded: withBlock, block: "    nsguard cluster.local {\n        mode log\n    }"},
		{name: "one line", guarded: strings.Replace(stock, "    ready\n", "    ready\n    nsguard\n", 1), block: "    nsguard"},
		{name: "no nsguard", guarded: stock, err: "no nsguard directive"},
		{name: "another change", guarded: strings.Replace(withBlock, "lameduck 10s", "lameduck 5s", 1),
			err: "from line 4:\n-        lameduck 10s\n+        lameduck 5s\n"},
		{name: "a plugin left out", guarded: strings.Replace(withBlock, "    cache 30\n", "", 1), err: "-    cache 30\n"},
		{name: "a plugin added", guarded: strings.Replace(withBlock, "    cache 30\n", "    cache 30\n    log\n", 1), err: "+    log\n"},
		{name: "two", guarded: strings.Replace(withBlock, "    cache 30\n", "    cache 30\n    nsguard\n", 1), err: "more than one nsguard"},
		{name: "unclosed", guarded: strings.TrimSuffix(strings.Replace(stock, "    cache 30\n}", "    nsguard {\n        mode log", 1), "\n"), err: "not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			block, err := OnlyNSGuard(stock, tt.guarded)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want one with %q", err, tt.err)
			case block != tt.block:
				t.Fatalf("block %q, want %q", block, tt.block)
			}
		})
	}
}

func TestNamedVersion(t *testing.T) {
	for _, tt := range []struct{ values, want string }{
		{"#   helm upgrade --install coredns coredns/coredns --version 1.46.2 -n kube-system -f x\n", "1.46.2"},
		{"# helm upgrade --install coredns coredns/coredns -n kube-system\n", ""},
		{"image: {}\n", ""},
	} {
		got, err := namedVersion([]byte(tt.values))
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("namedVersion(%q) = %q, %v; want %q", tt.values, got, err, tt.want)
		}
	}
}
