//go:build race

package e2e

// raceEnabled: the tests run with the race detector, and so does the
// runner binary they build.
const raceEnabled = true
