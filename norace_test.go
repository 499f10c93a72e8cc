//go:build !race

package nsguard

// raceEnabled: the race detector is off, so heap budgets are held.
const raceEnabled = false
