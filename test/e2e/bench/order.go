package main

import "math/rand/v2"

// runOrder is the order the n configurations run in, in round r. Every n rounds rotate one
// order, so that each configuration takes each place once: without shuffle the order of the
// configurations as listed; with it, one drawn afresh for each n rounds (the same for the
// same r), so that no configuration always runs after the same one.
func runOrder(r, n int, shuffle bool) []int {
	base := make([]int, n)
	for i := range base {
		base[i] = i
	}
	if shuffle {
		rng := rand.New(rand.NewPCG(uint64(r/n), 7))
		rng.Shuffle(n, func(i, j int) { base[i], base[j] = base[j], base[i] })
	}
	out := make([]int, n)
	for k := range out {
		out[k] = base[(r+k)%n]
	}
	return out
}
