package main

import (
	"slices"
	"strings"
	"testing"
	"time"
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

// tradeSlots swaps the addresses of each pair of twins, and startOrder then starts each
// build where the other started before; trading again puts everything back.
func TestTradeSlots(t *testing.T) {
	cs, err := withAgainst(stockConfigs, "v1")
	if err != nil {
		t.Fatal(err)
	}
	names := func(cs []config) (out []string) {
		for _, i := range startOrder(cs) {
			out = append(out, cs[i].name+" "+cs[i].ip)
		}
		return out
	}
	listed := names(cs)
	tradeSlots(cs)
	want := []string{
		"stock Corefile alone 127.53.11.1",
		"any (the floor) 127.53.11.2",
		"nsguard, mode log @v1 127.53.11.3",
		"nsguard, mode refuse @v1 127.53.11.4",
		"any again (the control) 127.53.11.5",
		"nsguard, mode log 127.53.11.11",
		"nsguard, mode refuse 127.53.11.12",
	}
	if got := names(cs); !slices.Equal(got, want) {
		t.Errorf("traded: start order %q, want %q", got, want)
	}
	tradeSlots(cs)
	if got := names(cs); !slices.Equal(got, listed) {
		t.Errorf("traded back: start order %q, want %q", got, listed)
	}
}

// abTable takes each build's ratio to any in the same round, and splits the sets by slots.
func TestABTable(t *testing.T) {
	old := configs
	defer func() { configs = old }()
	var err error
	if configs, err = withAgainst(stockConfigs, "v1"); err != nil {
		t.Fatal(err)
	}
	const log, logV1 = 2, 5
	// Four rounds in two sets: as listed, this build's mode log costs 10% more than v1's;
	// traded, the same. any beside each costs 1 µs a query, except beside v1 in round 3.
	var rows []sample
	for r := range 4 {
		gen := r / 2
		for i := range configs {
			if i == floorConfig {
				continue
			}
			cpu := 1000
			if i == log && gen == 0 {
				cpu = 1100
			}
			floor := 1000
			if i == logV1 && r == 3 {
				cpu, floor = 2000, 2000 // twice the load on both: the ratio to any holds
			}
			us := func(n int) time.Duration { return time.Duration(n) * time.Microsecond }
			rows = append(rows,
				sample{round: r, config: i, pair: i, generation: gen, traded: gen == 1, cpu: us(cpu), completed: 1000},
				sample{round: r, config: floorConfig, pair: i, generation: gen, traded: gen == 1, cpu: us(floor), completed: 1000})
		}
	}
	got, err := abTable(rows)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| nsguard, mode log | 2 | 4 | 1.050 (1.000–1.100) | 1.000–1.100 | 0 of 4 |",
		"| nsguard, mode log, slots as listed | 1 | 2 | 1.100 (1.100–1.100) | none: one set | 0 of 2 |",
		"| nsguard, mode log, slots traded | 1 | 2 | 1.000 (1.000–1.000) | none: one set | 0 of 2 |",
		"| nsguard, mode refuse | 2 | 4 | 1.000 (1.000–1.000) | 1.000–1.000 | 0 of 4 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no row %q in\n%s", want, got)
		}
	}
}

// withModes drops only the nsguard configurations of the modes not listed.
func TestWithModes(t *testing.T) {
	tests := []struct {
		cs      []config
		list    string
		want    []string // names kept
		wantErr string
	}{
		{stockConfigs, "log,refuse", []string{"stock Corefile alone", "any (the floor)", "nsguard, mode log", "nsguard, mode refuse", "any again (the control)"}, ""},
		{stockConfigs, "log", []string{"stock Corefile alone", "any (the floor)", "nsguard, mode log", "any again (the control)"}, ""},
		{stockConfigs, "refuse", []string{"stock Corefile alone", "any (the floor)", "nsguard, mode refuse", "any again (the control)"}, ""},
		// The template workaround refuses apexes without nsguard: it stays.
		{chainConfigs, "log", []string{"kubernetes alone", "any (the floor)", "nsguard, mode log, no view", "nsguard, mode log", "template NXDOMAIN workaround"}, ""},
		{stockConfigs, "log,nxdomain", nil, `unknown mode "nxdomain"`},
		{stockConfigs, "", nil, `unknown mode ""`},
	}
	for _, tc := range tests {
		t.Run(tc.list, func(t *testing.T) {
			got, err := withModes(tc.cs, tc.list)
			wantFlagErr(t, err, tc.wantErr)
			var names []string
			for _, c := range got {
				names = append(names, c.name)
			}
			if !slices.Equal(names, tc.want) {
				t.Errorf("kept %q, want %q", names, tc.want)
			}
		})
	}
}
