package main

import (
	"strings"
	"testing"
)

func TestCheckFlags(t *testing.T) {
	tests := []struct {
		name    string
		flag    *int
		value   int
		wantErr string // "" for none
	}{
		{"defaults", nil, 0, ""},
		{"a rate", rate, 12000, ""},
		{"negative rate", rate, -5, "-qps -5: want 0"},
		{"no rounds", rounds, 0, "-rounds 0: want at least 1"},
		{"no warm-up", warm, 0, ""},
		{"negative warm-up", warm, -1, "-warm -1"},
		{"no client Pods", pods, 0, "-client-pods 0"},
		{"negative profile", profiled, -20, "-profile -20"},
		{"never restart", restartEvery, 0, ""},
		{"negative restart", restartEvery, -1, "-restart -1"},
	}
	// -against needs an even number of sets of processes in each mix.
	againstTests := []struct {
		name            string
		rounds, restart int
		wantErr         string
	}{
		{"six sets", 30, 5, ""},
		{"four sets, the last short", 19, 5, ""},
		{"three sets", 15, 5, "-rounds 15 -restart 5: want an even number"},
		{"one set", 30, 0, "-restart 0: want an even number"},
		{"one set, restart past the end", 5, 5, "-rounds 5 -restart 5"},
	}
	for _, tc := range againstTests {
		t.Run("against, "+tc.name, func(t *testing.T) {
			oldA, oldR, oldE := *against, *rounds, *restartEvery
			defer func() { *against, *rounds, *restartEvery = oldA, oldR, oldE }()
			*against, *rounds, *restartEvery = "HEAD", tc.rounds, tc.restart
			wantFlagErr(t, checkFlags(), tc.wantErr)
		})
	}
	// -floors: shared or own; own floors trade slots as -against's builds do, and are what a
	// configuration runs beside.
	floorTests := []struct {
		name, floors string
		rounds       int
		sideBySide   bool
		wantErr      string
	}{
		{"own, six sets", "own", 30, true, ""},
		{"own, three sets", "own", 15, true, "-floors own with -rounds 15 -restart 5: want an even number"},
		{"own, one after the other", "own", 30, false, "-floors own with -side-by-side=false"},
		{"shared, three sets", "shared", 15, true, ""},
		{"unknown", "mine", 30, true, `-floors "mine": want shared or own`},
	}
	for _, tc := range floorTests {
		t.Run("floors, "+tc.name, func(t *testing.T) {
			oldF, oldR, oldS := *floors, *rounds, *sideBySide
			defer func() { *floors, *rounds, *sideBySide = oldF, oldR, oldS }()
			*floors, *rounds, *sideBySide = tc.floors, tc.rounds, tc.sideBySide
			wantFlagErr(t, checkFlags(), tc.wantErr)
		})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.flag != nil {
				old := *tc.flag
				*tc.flag = tc.value
				defer func() { *tc.flag = old }()
			}
			wantFlagErr(t, checkFlags(), tc.wantErr)
		})
	}
}

// wantFlagErr fails t unless err says want, or is nil when want is "".
func wantFlagErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatal(err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Fatalf("err %v, want one saying %q", err, want)
	}
}
