package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// MaxMagnitude bounds every number the runner reads as a measurement.
// Throughputs, latencies in milliseconds, scores, token counts and GPU
// seconds all sit many orders of magnitude below it, and sums, spans and
// squares of values below it stay finite, which the statistics and the
// trend page's axes rely on.
const MaxMagnitude = 1e15

// ErrImplausible marks a measurement that is not finite or is beyond
// MaxMagnitude: no tool measures it, so it is refused where it is read.
var ErrImplausible = errors.New("not a plausible measurement")

// CheckValue reports whether v may be carried as a measurement.
func CheckValue(v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("%v is %w (not finite)", v, ErrImplausible)
	case math.Abs(v) > MaxMagnitude:
		return fmt.Errorf("%g is %w (beyond ±%g)", v, ErrImplausible, MaxMagnitude)
	}
	return nil
}

// plausible is CheckValue on a raw JSON value that is a number, including
// one too large for a float64; other values are the typed readers' to judge.
func plausible(raw json.RawMessage) error {
	if kind(raw) != "a number" {
		return nil
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return fmt.Errorf("%s is %w (beyond a float64)", raw, ErrImplausible)
	}
	return CheckValue(v)
}
