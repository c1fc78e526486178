package detect

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Change is a significant change in a series: series[Index-1] is the last
// value before it and series[Index] the first after.
type Change struct {
	Index int
	// P is the two-sided p-value of Student's t-test between the values
	// before and after, within the segment the change was found in.
	P float64
	// Q is the E-Divisive statistic of the split.
	Q float64
	// Before and After are the means of the two sides in that segment.
	Before, After float64
}

// ChangePoints finds every significant change in series by E-Divisive
// means (Matteson and James 2014, exponent 1): in a segment, take the split
// that maximizes the scaled energy distance between its two sides; keep it
// if Student's t-test finds the two sides' means different at level alpha,
// and search both sides again. The result is sorted by index and does not
// depend on any random choice.
func ChangePoints(series []float64, alpha float64) []Change {
	var out []Change
	var search func(lo, hi int)
	search = func(lo, hi int) {
		seg := series[lo:hi]
		tau, q, found := bestSplit(seg)
		if !found {
			return
		}
		p, before, after := studentT(seg[:tau], seg[tau:])
		if !(p < alpha) {
			return
		}
		out = append(out, Change{Index: lo + tau, P: p, Q: q, Before: before, After: after})
		search(lo, lo+tau)
		search(lo+tau, hi)
	}
	search(0, len(series))
	slices.SortFunc(out, func(a, b Change) int { return a.Index - b.Index })
	return out
}

// bestSplit returns the τ in [1, len(x)) maximizing the E-Divisive
// statistic Q(x[:τ], x[τ:]); the earliest wins a tie. A t-test needs three
// values, so shorter segments have no split.
func bestSplit(x []float64) (tau int, q float64, ok bool) {
	if len(x) < 3 {
		return 0, 0, false
	}
	q = math.Inf(-1)
	for t := 1; t < len(x); t++ {
		if v := energyQ(x[:t], x[t:]); v > q {
			tau, q = t, v
		}
	}
	return tau, q, true
}

// energyQ is the scaled sample energy distance of Matteson and James
// (2014) with exponent 1:
//
//	Q = mn/(m+n) · ( 2/(mn) Σ|Xi−Yj| − C(m,2)⁻¹ Σ|Xi−Xk| − C(n,2)⁻¹ Σ|Yj−Yk| )
//
// where a side with one value has no within-side pairs and contributes 0.
func energyQ(x, y []float64) float64 {
	m, n := float64(len(x)), float64(len(y))
	var between float64
	for _, a := range x {
		for _, b := range y {
			between += math.Abs(a - b)
		}
	}
	e := 2*between/(m*n) - within(x) - within(y)
	return m * n / (m + n) * e
}

// within is the mean absolute difference over the pairs of x.
func within(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	var sum float64
	for i := range x {
		for k := i + 1; k < len(x); k++ {
			sum += math.Abs(x[i] - x[k])
		}
	}
	n := float64(len(x))
	return sum / (n * (n - 1) / 2)
}

// studentT is the two-sided p-value of the pooled-variance t-test between
// x and y (len(x)+len(y) >= 3), and the two means. Equal-variance Student's
// t is used, not Welch's, because one side may hold a single night.
func studentT(x, y []float64) (p, mx, my float64) {
	mx, sx := meanSD(x)
	my, sy := meanSD(y)
	nx, ny := float64(len(x)), float64(len(y))
	df := nx + ny - 2
	pooled := ((nx-1)*sx*sx + (ny-1)*sy*sy) / df
	diff := math.Abs(mx - my)
	if pooled == 0 {
		if diff == 0 {
			return 1, mx, my
		}
		return 0, mx, my
	}
	t := diff / math.Sqrt(pooled*(1/nx+1/ny))
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(t), mx, my
}
