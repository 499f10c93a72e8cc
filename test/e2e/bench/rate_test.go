package main

import "testing"

func TestPerPod(t *testing.T) {
	for _, c := range []struct{ qps, pods, want int }{
		{0, 4, 0},  // no limit stays none
		{-1, 4, 0}, // nor does a negative rate make one
		{12000, 4, 3000},
		{3, 4, 1}, // a rate below one a Pod still limits
		{12000, 1, 12000},
	} {
		if got := perPod(c.qps, c.pods); got != c.want {
			t.Errorf("perPod(%d, %d) = %d, want %d", c.qps, c.pods, got, c.want)
		}
	}
}
