package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFloorTable(t *testing.T) {
	logView := configNamed(t, "nsguard, mode log")
	// run is one dnsperf run: CPU per query in µs, of the configuration beside any or of any.
	run := func(round, config, pair int, cpuPerQuery int64) sample {
		return sample{round: round, config: config, pair: pair, completed: 1, cpu: time.Duration(cpuPerQuery) * time.Microsecond}
	}
	// gen is run served by the gen-th set of processes.
	gen := func(s sample, gen int) sample { s.generation = gen; return s }
	tests := []struct {
		name    string
		rows    []sample
		csv     string   // a file of another kind, instead of rows
		want    []string // lines the table must hold
		wantErr string
	}{
		{
			name: "ratios within each run",
			rows: []sample{
				run(0, logView, logView, 50), run(0, floorConfig, logView, 40),
				run(1, logView, logView, 30), run(1, floorConfig, logView, 60),
				run(2, logView, logView, 44), run(2, floorConfig, logView, 40),
			},
			// 1.25, 0.5 and 1.1: the median of the ratios, not the ratio of the medians. One
			// set of processes: no interval.
			want: []string{"| nsguard, mode log | 3 | 1 | 1.100 (0.800–1.175) | none: one set | 1.100–1.100 | 2 of 3 |"},
		},
		{
			name: "each set of processes drawn whole",
			// Two sets whose runs agree within each set and not between them: the interval
			// spans both sets' medians, where drawing runs one by one would narrow it.
			rows: []sample{
				gen(run(0, logView, logView, 100), 0), gen(run(0, floorConfig, logView, 100), 0),
				gen(run(1, logView, logView, 101), 0), gen(run(1, floorConfig, logView, 100), 0),
				gen(run(2, logView, logView, 100), 0), gen(run(2, floorConfig, logView, 100), 0),
				gen(run(3, logView, logView, 110), 1), gen(run(3, floorConfig, logView, 100), 1),
				gen(run(4, logView, logView, 111), 1), gen(run(4, floorConfig, logView, 100), 1),
				gen(run(5, logView, logView, 110), 1), gen(run(5, floorConfig, logView, 100), 1),
			},
			want: []string{"| nsguard, mode log | 6 | 2 | 1.055 (1.002–1.100) | 1.000–1.100 | 1.000–1.100 | 4 of 6 |"},
		},
		{
			name: "a file from before the generation column",
			csv: "round,configuration,beside,completed,cpu_us\n" +
				"0,\"nsguard, mode log\",any (the floor),1,50\n0,any (the floor),\"nsguard, mode log\",1,40\n" +
				"1,\"nsguard, mode log\",any (the floor),1,44\n1,any (the floor),\"nsguard, mode log\",1,40\n",
			// Each round a set of its own, as the interval was drawn before.
			want: []string{"| nsguard, mode log | 2 | 2 | 1.175 (1.138–1.212) | 1.100–1.250 | 1.100–1.250 | 2 of 2 |"},
		},
		{
			name:    "one after the other",
			rows:    []sample{run(0, logView, -1, 50)},
			wantErr: "one after the other",
		},
		{
			name:    "no floor beside",
			rows:    []sample{run(0, logView, logView, 50)},
			wantErr: "no run of any beside it",
		},
		{
			name:    "not a rounds file",
			csv:     "a,b\n1,2\n",
			wantErr: `no column "round"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Each batch is pooled from the file writeCSV makes of it; a run tables its rows at once.
			path := filepath.Join(t.TempDir(), "rounds.csv")
			if tc.csv != "" {
				if err := os.WriteFile(path, []byte(tc.csv), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := writeCSV(path, tc.rows, 0); err != nil {
				t.Fatal(err)
			}
			got, err := pooled([]string{path})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("table lacks %q:\n%s", w, got)
				}
			}
			if tc.csv != "" {
				return
			}
			if direct, err := floorTable(tc.rows); err != nil || direct != got {
				t.Errorf("the rows tabled at once give %q, %v; read back from their file %q", direct, err, got)
			}
		})
	}
}

// TestPoolKeepsRatesApart: runs at a fixed rate and closed-loop runs do not pool.
func TestPoolKeepsRatesApart(t *testing.T) {
	logView := configNamed(t, "nsguard, mode log")
	rows := []sample{
		{round: 0, config: logView, pair: logView, completed: 1, cpu: 50 * time.Microsecond},
		{round: 0, config: floorConfig, pair: logView, completed: 1, cpu: 40 * time.Microsecond},
	}
	dir := t.TempDir()
	files := map[int]string{}
	for _, qps := range []int{0, 12000} {
		files[qps] = filepath.Join(dir, "rounds-"+strconv.Itoa(qps)+".csv")
		if err := writeCSV(files[qps], rows, qps); err != nil {
			t.Fatal(err)
		}
	}
	// One file of both: its rows' rates differ.
	mixed := filepath.Join(dir, "rounds-mixed.csv")
	closed, err1 := os.ReadFile(files[0])
	fixed, err2 := os.ReadFile(files[12000])
	_, rest, _ := strings.Cut(string(fixed), "\n") // its rows, without the header
	if err := errors.Join(err1, err2, os.WriteFile(mixed, append(closed, rest...), 0o644)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		paths   []string
		wantErr string
	}{
		{"same rate", []string{files[12000], files[12000]}, ""},
		{"one file of two rates", []string{mixed}, "qps_limit \"12000\": want the file's one -qps"},
		{"closed loop and a rate", []string{files[0], files[12000]}, "at -qps 0, " + files[12000] + " at -qps 12000"},
	}
	for _, tc := range tests {
		_, err := pooled(tc.paths)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: err %v, want one saying %q", tc.name, err, tc.wantErr)
		}
	}
}

// configNamed is the index of the configuration called name.
func configNamed(t *testing.T, name string) int {
	t.Helper()
	i := slices.IndexFunc(configs, func(c config) bool { return c.name == name })
	if i < 0 {
		t.Fatalf("no configuration %q", name)
	}
	return i
}
