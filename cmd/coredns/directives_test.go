package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/core/dnsserver"
)

func TestInsertBefore(t *testing.T) {
	tests := []struct {
		name       string
		directives []string
		want       []string
		wantErr    string
	}{
		{"middle", []string{"autopath", "acl", "cache", "kubernetes"}, []string{"autopath", "acl", "nsguard", "cache", "kubernetes"}, ""},
		{"first", []string{"cache", "forward"}, []string{"nsguard", "cache", "forward"}, ""},
		{"anchor missing", []string{"kubernetes", "forward"}, nil, `anchor "cache" is not in the plugin order`},
		{"already there", []string{"nsguard", "cache"}, nil, `directive "nsguard" is already in the plugin order`},
		{"empty", nil, nil, `anchor "cache"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.directives)
			got, err := insertBefore(tc.directives, "nsguard", "cache")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
			if !slices.Equal(tc.directives, before) {
				t.Errorf("the input was changed to %v", tc.directives)
			}
		})
	}
}

// TestPluginOrder proves where nsguard runs in the CoreDNS built here.
func TestPluginOrder(t *testing.T) {
	d := dnsserver.Directives // TestMain has set the order as main does
	at := func(name string) int {
		i := slices.Index(d, name)
		if i < 0 {
			t.Fatalf("directive %q missing from %v", name, d)
		}
		return i
	}
	g := at("nsguard")
	if d[g+1] != "cache" {
		t.Errorf("nsguard is followed by %q, want cache", d[g+1])
	}
	// autopath calls the rest of the chain once per search candidate; acl may refuse first;
	// metadata collects nsguard's values and dnstap wraps the writer nsguard answers into.
	for _, before := range []string{"metadata", "dnstap", "prometheus", "log", "rewrite", "autopath", "acl"} {
		if at(before) > g {
			t.Errorf("%s runs after nsguard; it must run before", before)
		}
	}
	// A cached answer, and what the plugins that answer write, must pass nsguard.
	for _, after := range []string{"cache", "template", "hosts", "kubernetes", "file", "auto", "etcd", "forward", "grpc"} {
		if at(after) < g {
			t.Errorf("%s runs before nsguard; it must run after", after)
		}
	}
	if len(d) != len(original)+1 {
		t.Errorf("%d directives, want the %d standard ones plus nsguard", len(d), len(original))
	}
	for _, name := range original {
		at(name) // none lost
	}
}
