package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// withOwnFloors gives every configuration but the first an any of its own, on addresses no
// other one uses; the first keeps the shared floor, and each pair trades slots and back.
func TestWithOwnFloors(t *testing.T) {
	useOwnFloors(t)
	if !slices.EqualFunc(configs[:len(stockConfigs)], stockConfigs, func(a, b config) bool { return a.name == b.name && a.ip == b.ip }) {
		t.Errorf("the configurations listed changed")
	}
	ips := map[string]bool{stockUpstreamIP: true}
	for _, c := range configs {
		if ips[c.ip] {
			t.Errorf("%s: address %s used twice", c.name, c.ip)
		}
		ips[c.ip] = true
	}
	beside := func() (out []string) {
		for i, c := range configs {
			if !isFloor(i) {
				f := configs[floorOf(i)]
				out = append(out, c.name+" "+c.ip+" | "+f.name+" "+f.ip+" "+f.stock)
			}
		}
		return out
	}
	listed := beside()
	want := []string{
		"stock Corefile alone 127.53.11.1 | any (the floor) 127.53.11.2 any",
		"nsguard, mode log 127.53.11.3 | any beside nsguard, mode log 127.53.11.21 any",
		"nsguard, mode refuse 127.53.11.4 | any beside nsguard, mode refuse 127.53.11.22 any",
		"any again (the control) 127.53.11.5 | any beside any again (the control) 127.53.11.23 any",
	}
	if !slices.Equal(listed, want) {
		t.Errorf("pairs %q, want %q", listed, want)
	}
	tradeSlots(configs)
	traded := []string{
		"stock Corefile alone 127.53.11.2 | any (the floor) 127.53.11.1 any",
		"nsguard, mode log 127.53.11.21 | any beside nsguard, mode log 127.53.11.3 any",
		"nsguard, mode refuse 127.53.11.22 | any beside nsguard, mode refuse 127.53.11.4 any",
		"any again (the control) 127.53.11.23 | any beside any again (the control) 127.53.11.5 any",
	}
	if got := beside(); !slices.Equal(got, traded) {
		t.Errorf("traded: pairs %q, want %q", got, traded)
	}
	tradeSlots(configs)
	if got := beside(); !slices.Equal(got, listed) {
		t.Errorf("traded back: pairs %q, want %q", got, listed)
	}

	withTwins, err := withAgainst(stockConfigs, "v1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = withOwnFloors(withTwins)
	wantFlagErr(t, err, "-floors own with -against: not both")
}

// Own floors: each ratio is to the any beside the configuration; a run of the shared floor's
// does not pool with them, and a run with own floors reads back as it was tabled.
func TestOwnFloorTable(t *testing.T) {
	useOwnFloors(t)
	logView, control := configNamed(t, "nsguard, mode log"), configNamed(t, "any again (the control)")
	us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
	var rows []sample
	for r := range 2 {
		for _, i := range []int{baseConfig, logView, control} {
			cpu, floor := 100, 100
			if i == logView {
				cpu = 103
			}
			if r == 1 {
				cpu, floor = 2*cpu, 2*floor // both of a pair slowed: the ratio holds
			}
			rows = append(rows,
				sample{round: r, config: i, pair: i, completed: 1, cpu: us(cpu)},
				sample{round: r, config: floorOf(i), pair: i, completed: 1, cpu: us(floor)})
		}
	}
	path := filepath.Join(t.TempDir(), "rounds.csv")
	if err := writeCSV(path, rows, 0); err != nil {
		t.Fatal(err)
	}
	csv, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(csv), `0,"any beside nsguard, mode log","nsguard, mode log",`) {
		t.Errorf("the file does not name the own floor of mode log's run:\n%s", csv)
	}
	got, err := pooled([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| nsguard, mode log | 2 | 1 | 1.030 (1.030–1.030) |",
		"| any again (the control) | 2 | 1 | 1.000 (1.000–1.000) |",
		"| stock Corefile alone | 2 | 1 | 1.000 (1.000–1.000) |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no row %q in\n%s", want, got)
		}
	}
	if direct, err := floorTable(rows); err != nil || direct != got {
		t.Errorf("the rows tabled at once give %q, %v; read back from their file %q", direct, err, got)
	}

	// Without -floors own, the file's own floors are named for what they are.
	configs = stockConfigs
	_, err = pooled([]string{path})
	wantFlagErr(t, err, "a run with own floors: pool it with -floors own")
	useOwnFloors(t)

	// Mode log beside the shared floor, as a run without -floors own has it.
	shared := slices.Clone(rows)
	for k, s := range shared {
		if s.pair == logView && isFloor(s.config) {
			shared[k].config = floorConfig
		}
	}
	_, err = floorTable(shared)
	wantFlagErr(t, err, "ran beside any (the floor), not any beside nsguard, mode log")
}

// useOwnFloors sets configs to the stock workload's with own floors until t ends.
func useOwnFloors(t *testing.T) {
	t.Helper()
	old := configs
	t.Cleanup(func() { configs = old })
	var err error
	if configs, err = withOwnFloors(stockConfigs); err != nil {
		t.Fatal(err)
	}
}
