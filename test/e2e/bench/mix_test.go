package main

import (
	"strings"
	"testing"
)

// TestMixes checks each mix's shares, that its questions are distinct, and that a client's
// search candidates carry its own namespace.
func TestMixes(t *testing.T) {
	tests := []struct {
		name   string
		mix    shares
		client string
		apexes int
	}{
		{"everyday", everyday, "new-namespace-1", mixSize / 10},
		{"incident", incident, "team-2", mixSize / 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			qs := makeMix(tc.mix, tc.client, 1)
			if len(qs) != mixSize {
				t.Fatalf("%d questions, want %d", len(qs), mixSize)
			}
			seen, classes, own := map[question]bool{}, map[string]int{}, 0
			for _, q := range qs {
				if seen[q] {
					t.Errorf("%s %d twice", q.name, q.qtype)
				}
				seen[q] = true
				classes[q.class]++
				if strings.Contains(q.name, "."+tc.client+".svc.") {
					own++
				}
			}
			if classes["apex"] != tc.apexes {
				t.Errorf("%d namespace apexes, want %d", classes["apex"], tc.apexes)
			}
			if own == 0 {
				t.Errorf("no search candidate in namespace %s", tc.client)
			}
		})
	}
}
