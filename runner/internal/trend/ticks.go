package trend

import (
	"math"
	"strconv"
)

// targetTicks is how many y-axis ticks a panel aims for; 130 px of plot
// height fits five labels without crowding.
const targetTicks = 5

// tickStep is a step of mantissa × 10^exp with mantissa 1, 2 or 5, kept in
// that form so the number of decimals to print is exact.
type tickStep struct {
	mantissa int
	exp      int
}

func (s tickStep) value() float64 { return float64(s.mantissa) * math.Pow10(s.exp) }

// decimals is how many digits after the point tick labels need.
func (s tickStep) decimals() int { return max(0, -s.exp) }

// axis is a y-axis: evenly spaced tick values from ticks[0] to the last one,
// which are also the bottom and top of the plot.
type axis struct {
	ticks []float64
	step  tickStep
}

func (a axis) min() float64 { return a.ticks[0] }
func (a axis) max() float64 { return a.ticks[len(a.ticks)-1] }

// niceAxis returns ticks at multiples of a 1/2/5 × 10^k step covering
// [lo, hi]. It picks the step whose tick count is closest to targetTicks;
// among equally close ones, the axis that wastes the least height on empty
// range, then the one with fewer ticks. lo and hi must be finite, lo < hi.
func niceAxis(lo, hi float64) axis {
	// Slack for quotients such as 0.3/0.1 = 2.9999999999999996 that are
	// meant to be whole.
	const slack = 1e-9
	exp := int(math.Floor(math.Log10((hi - lo) / (targetTicks - 1))))
	var best axis
	bestMiss, bestSpan := math.MaxInt, math.Inf(1)
	for e := exp - 1; e <= exp+1; e++ {
		for _, m := range []int{1, 2, 5} {
			step := tickStep{mantissa: m, exp: e}
			s := step.value()
			first := math.Floor(lo/s + slack)
			last := math.Ceil(hi/s - slack)
			n := int(last-first) + 1
			miss := abs(n - targetTicks)
			span := (last - first) * s
			better := miss < bestMiss ||
				miss == bestMiss && (span < bestSpan || span == bestSpan && n < len(best.ticks))
			if !better {
				continue
			}
			ticks := make([]float64, n)
			for i := range ticks {
				ticks[i] = (first + float64(i)) * s
			}
			best, bestMiss, bestSpan = axis{ticks: ticks, step: step}, miss, span
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// valueRange returns the span the y-axis must show: the values plus a
// margin, so that no marker sits on the plot frame. A flat series gets
// padding so that it is drawn mid-plot instead of on a degenerate axis.
func valueRange(values []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range values {
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo == hi {
		pad := math.Abs(lo) * 0.1
		if pad == 0 {
			pad = 1
		}
		return lo - pad, hi + pad
	}
	margin := (hi - lo) * 0.04
	return lo - margin, hi + margin
}

// formatFixed prints v with a fixed number of decimals, never as "-0".
func formatFixed(v float64, decimals int) string {
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if isNegativeZero(s) {
		return s[1:]
	}
	return s
}

func isNegativeZero(s string) bool {
	if len(s) < 2 || s[0] != '-' {
		return false
	}
	for _, c := range s[1:] {
		if c != '0' && c != '.' {
			return false
		}
	}
	return true
}
