package main

import (
	"slices"
	"testing"
)

// withAgainst repeats only the nsguard configurations, on addresses no other one uses.
func TestWithAgainst(t *testing.T) {
	tests := []struct {
		name string
		cs   []config
		want []string // names and addresses added
	}{
		{"chain", chainConfigs, []string{
			"nsguard, mode log, no view @v1 127.53.10.11",
			"nsguard, mode log @v1 127.53.10.12",
			"nsguard, mode refuse @v1 127.53.10.13",
		}},
		{"stock", stockConfigs, []string{
			"nsguard, mode log @v1 127.53.11.11",
			"nsguard, mode refuse @v1 127.53.11.12",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.cs)
			got, err := withAgainst(tc.cs, "v1")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got[:len(before)], before, func(a, b config) bool { return a.name == b.name && a.ip == b.ip && !a.against }) {
				t.Errorf("the configurations of this build changed")
			}
			var added []string
			ips := map[string]bool{stockUpstreamIP: true}
			for _, c := range got {
				if ips[c.ip] {
					t.Errorf("%s: address %s used twice", c.name, c.ip)
				}
				ips[c.ip] = true
			}
			for _, c := range got[len(before):] {
				if !c.against {
					t.Errorf("%s: not marked as built from the revision", c.name)
				}
				added = append(added, c.name+" "+c.ip)
			}
			if !slices.Equal(added, tc.want) {
				t.Errorf("added %q, want %q", added, tc.want)
			}
		})
	}
}
