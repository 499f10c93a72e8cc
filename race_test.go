//go:build race

package nsguard

// raceEnabled: the race detector is on, and it inflates the heap, so heap budgets are logged
// but not held.
const raceEnabled = true
