package detect

import (
	"fmt"
	"math"
	"slices"
)

// worsePct turns a log-scale worsening into percent of the baseline: a
// throughput down by w is 1−e^(−w) lower, a latency up by w is e^w−1 higher.
func worsePct(logWorse, dir float64) float64 {
	if dir > 0 {
		return -math.Expm1(-logWorse) * 100
	}
	return math.Expm1(logWorse) * 100
}

// cvOf is the coefficient of variation of a log-normal variable whose log
// has standard deviation sd.
func cvOf(sd float64) float64 {
	return math.Sqrt(math.Expm1(sd * sd))
}

func logs(v []float64, what string) ([]float64, error) {
	out := make([]float64, len(v))
	for i, x := range v {
		if !(x > 0) || math.IsInf(x, 1) {
			return nil, fmt.Errorf("%w: %s %d is %v; values must be positive and finite", ErrInput, what, i+1, x)
		}
		out[i] = math.Log(x)
	}
	return out, nil
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// meanSD returns the mean and the sample standard deviation (0 for fewer
// than two values).
func meanSD(x []float64) (float64, float64) {
	if len(x) == 0 {
		return 0, 0
	}
	var sum float64
	for _, v := range x {
		sum += v
	}
	m := sum / float64(len(x))
	if len(x) < 2 {
		return m, 0
	}
	var ss float64
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(len(x)-1))
}

// medianVar is the variance of the median of n nights in units of one
// night's: the mean's 1/n for one or two, π/(2n) from three on.
func medianVar(n int) float64 {
	if n <= 2 {
		return 1 / float64(max(n, 1))
	}
	return math.Pi / (2 * float64(n))
}

// logWorse is worsePct's inverse: the log-scale worsening of pct.
func logWorse(pct, dir float64) float64 {
	if dir > 0 {
		return -math.Log1p(-min(pct, 99.9) / 100)
	}
	return math.Log1p(pct / 100)
}
