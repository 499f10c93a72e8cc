package main

import "fmt"

// checkFlags refuses the counts that would make a run mean nothing, naming the flag: a
// negative -qps, for one, would otherwise run as a closed loop under another name.
func checkFlags() error {
	for _, f := range []struct {
		name string
		v    int
		min  int
		want string
	}{
		{"client-pods", *pods, 1, "at least 1"},
		{"rounds", *rounds, 1, "at least 1"},
		{"seconds", *seconds, 1, "at least 1"},
		{"warm", *warm, 0, "0 for no warm-up, or more"},
		{"clients", *clients, 1, "at least 1"},
		{"threads", *threads, 1, "at least 1"},
		{"outstanding", *inflight, 1, "at least 1"},
		{"qps", *rate, 0, "0 for as many as each server answers, or a rate"},
		{"profile", *profiled, 0, "0 for no profile, or more"},
		{"timeout", *timeout, 1, "at least 1"},
		{"restart", *restartEvery, 0, "0 to keep the first servers, or a number of rounds"},
	} {
		if f.v < f.min {
			return fmt.Errorf("-%s %d: want %s", f.name, f.v, f.want)
		}
	}
	switch *floors {
	case "shared":
	case "own":
		if !*sideBySide {
			return fmt.Errorf("-floors own with -side-by-side=false: a floor is what a configuration runs beside")
		}
	default:
		return fmt.Errorf("-floors %q: want shared or own", *floors)
	}
	// Each server of a pair that trades slots (tradeSlots) must hold each as often: in every
	// mix, an even number of sets of processes.
	if trading() && *pool == "" {
		if sets := (*rounds + *restartEvery - 1) / max(*restartEvery, 1); *restartEvery == 0 || sets%2 != 0 {
			return fmt.Errorf("%s with -rounds %d -restart %d: want an even number of sets of processes (-restart rounds each), so that each server of a pair runs in each slot as often", tradingFlag(), *rounds, *restartEvery)
		}
	}
	return nil
}

// tradingFlag names the flag that makes slots trade.
func tradingFlag() string {
	if *against != "" {
		return "-against"
	}
	return "-floors own"
}
