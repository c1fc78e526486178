//go:build race

package calibrate

// raceEnabled: the race detector slows the simulation several times over.
const raceEnabled = true
