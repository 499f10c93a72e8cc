package main

import (
	"slices"
	"testing"
)

// TestRunOrder: every n rounds put each configuration in each place once; shuffled, the
// configuration before each one changes from one n rounds to the next.
func TestRunOrder(t *testing.T) {
	const n = 5
	for _, tc := range []struct {
		name    string
		shuffle bool
	}{{"rotated", false}, {"shuffled", true}} {
		t.Run(tc.name, func(t *testing.T) {
			before := map[[2]int]bool{} // (configuration, the one run just before it)
			for block := range 8 {
				places := make([][n]int, n) // configuration → how often in each place
				for r := block * n; r < (block+1)*n; r++ {
					o := runOrder(r, n, tc.shuffle)
					if got := slices.Sorted(slices.Values(o)); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
						t.Fatalf("round %d: order %v is not one of each configuration", r, o)
					}
					if !slices.Equal(o, runOrder(r, n, tc.shuffle)) {
						t.Fatalf("round %d: a second call gave another order", r)
					}
					for k, c := range o {
						places[c][k]++
						if k > 0 {
							before[[2]int{c, o[k-1]}] = true
						}
					}
				}
				for c, p := range places {
					if p != [n]int{1, 1, 1, 1, 1} {
						t.Errorf("rounds %d to %d: configuration %d took the places %v times, want each once", block*n, (block+1)*n-1, c, p)
					}
				}
			}
			if !tc.shuffle && !slices.Equal(runOrder(2, n, false), []int{2, 3, 4, 0, 1}) {
				t.Errorf("round 2 without shuffle: %v, want the rotation 2 3 4 0 1", runOrder(2, n, false))
			}
			// Rotated, each configuration follows only the one listed before it.
			if neighbours := len(before); tc.shuffle == (neighbours <= n) {
				t.Errorf("%d pairs of a configuration and the one before it over 40 rounds", neighbours)
			}
		})
	}
}
