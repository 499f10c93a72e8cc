package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const csvHeader = "round,configuration,beside,qps,completed,lost,cpu_us,cpu_us_per_query,dnsperf_cpu_us,steal\n"

func TestFloorTable(t *testing.T) {
	tests := []struct {
		name    string
		csv     string
		want    []string // lines the table must hold
		wantErr string
	}{
		{
			name: "ratios within each run",
			csv: csvHeader +
				"0,\"nsguard, mode log\",any (the floor),1,1,0,1,50.00,1,0\n" +
				"0,any (the floor),\"nsguard, mode log\",1,1,0,1,40.00,1,0\n" +
				"1,\"nsguard, mode log\",any (the floor),1,1,0,1,30.00,1,0\n" +
				"1,any (the floor),\"nsguard, mode log\",1,1,0,1,60.00,1,0\n" +
				"2,\"nsguard, mode log\",any (the floor),1,1,0,1,44.00,1,0\n" +
				"2,any (the floor),\"nsguard, mode log\",1,1,0,1,40.00,1,0\n",
			// 1.25, 0.5 and 1.1: the median of the ratios, not the ratio of the medians.
			want: []string{"| nsguard, mode log | 3 | 1.100 (0.800–1.175) |", "| 2 of 3 |"},
		},
		{
			name: "one after the other",
			csv: csvHeader +
				"0,\"nsguard, mode log\",,1,1,0,1,50.00,1,0\n",
			wantErr: "one after the other",
		},
		{
			name: "no floor beside",
			csv: csvHeader +
				"0,\"nsguard, mode log\",any (the floor),1,1,0,1,50.00,1,0\n",
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
			path := filepath.Join(t.TempDir(), "rounds.csv")
			if err := os.WriteFile(path, []byte(tc.csv), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := floorTable([]string{path})
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
		})
	}
}
