package detect

import (
	"math"
	"slices"
)

// Change is a change in a series: series[Index-1] is the last value before
// it and series[Index] the first after.
type Change struct {
	Index int
	// P is the two-sided p-value of Student's t-test between the values
	// before and after, within the neighbouring changes; 0 for a known
	// change.
	P float64
	// Q is the E-Divisive statistic of the split.
	Q float64
	// Before and After are the means of the two sides in that segment.
	Before, After float64
	// Known marks a change given to the search (a recipe change, an
	// accepted regression), not found by it.
	Known bool
	// Flags marks a change where a run of nights the gate flagged
	// begins (withFlaggedRun), not found by the search either.
	Flags bool
}

// Search finds changes by E-Divisive means (Matteson and James 2014,
// exponent 1): in a segment, take the split that maximizes the scaled
// energy distance between its two sides; keep it if Student's t-test finds
// the two sides' means different at level Alpha, and search both sides
// again. Then, as Apache Otava does, merge: the weakest change, judged
// against its neighbours only, is dropped while its p-value is not below
// Alpha. The result does not depend on any random choice.
type Search struct {
	Alpha float64
	// MinSegment is the fewest values on each side of a change found
	// (1 when zero): a single odd night is not a new regime.
	MinSegment int
	// Known are indexes where a change is known to start; the search runs
	// between them and never drops them.
	Known []int
	// Scan makes P account for the search: the t-test's p-value is
	// multiplied by the number of splits the segment offered (Bonferroni),
	// since the best of many splits of pure noise looks significant.
	Scan bool
	// Inflate multiplies the variance the t-test assumes (1 when zero):
	// (1+ρ)/(1−ρ) for nights autocorrelated at ρ, whose slow wander is
	// not a change.
	Inflate float64
}

// ChangePoints finds every significant change in series at level alpha,
// sorted by index.
func ChangePoints(series []float64, alpha float64) []Change {
	return Search{Alpha: alpha}.Find(series)
}

// Find returns the changes of series, known ones included, sorted by index.
func (s Search) Find(series []float64) []Change {
	minSeg := max(1, s.MinSegment)
	var out []Change
	var search func(lo, hi int)
	search = func(lo, hi int) {
		seg := series[lo:hi]
		tau, q, found := bestSplit(seg, minSeg)
		if !found {
			return
		}
		p, before, after := s.test(seg[:tau], seg[tau:], len(seg))
		if !(p < s.Alpha) {
			return
		}
		out = append(out, Change{Index: lo + tau, P: p, Q: q, Before: before, After: after})
		search(lo, lo+tau)
		search(lo+tau, hi)
	}
	bounds := []int{0}
	for _, k := range s.Known {
		if k > 0 && k < len(series) && !slices.Contains(bounds, k) {
			bounds = append(bounds, k)
		}
	}
	slices.Sort(bounds)
	for i, lo := range bounds {
		hi := len(series)
		if i+1 < len(bounds) {
			hi = bounds[i+1]
		}
		if lo > 0 {
			b, _ := meanSD(series[max(0, bounds[i-1]):lo])
			a, _ := meanSD(series[lo:hi])
			out = append(out, Change{Index: lo, Known: true, Before: b, After: a})
		}
		search(lo, hi)
	}
	slices.SortFunc(out, func(a, b Change) int { return a.Index - b.Index })
	return s.merge(series, out)
}

// test is the p-value of a split of a segment of n values into x and y.
func (s Search) test(x, y []float64, n int) (p, mx, my float64) {
	p, mx, my = studentT(x, y, s.Inflate)
	if s.Scan {
		p = min(1, p*float64(max(1, n-2*max(1, s.MinSegment)+1)))
	}
	return p, mx, my
}

// merge drops, one at a time, the found change least significant against
// its neighbouring changes while it is not significant at alpha, and
// recomputes the p-values and means of those left.
func (s Search) merge(series []float64, cs []Change) []Change {
	for {
		worst, worstP := -1, -1.0
		for i := range cs {
			if cs[i].Known {
				continue
			}
			lo, hi := 0, len(series)
			if i > 0 {
				lo = cs[i-1].Index
			}
			if i+1 < len(cs) {
				hi = cs[i+1].Index
			}
			p, b, a := s.test(series[lo:cs[i].Index], series[cs[i].Index:hi], hi-lo)
			cs[i].P, cs[i].Before, cs[i].After = p, b, a
			if p > worstP {
				worst, worstP = i, p
			}
		}
		if worst < 0 || worstP < s.Alpha {
			return cs
		}
		cs = slices.Delete(cs, worst, worst+1)
	}
}

// bestSplit returns the τ in [minSeg, len(x)−minSeg] maximizing the
// E-Divisive statistic Q(x[:τ], x[τ:]); the earliest wins a tie. A t-test
// needs three values, so shorter segments have no split. It takes O(n²):
// the within-side sums of every prefix and suffix are built incrementally
// and the between-side sum is what the total leaves.
func bestSplit(x []float64, minSeg int) (tau int, q float64, ok bool) {
	n := len(x)
	if n < 3 || n < 2*minSeg {
		return 0, 0, false
	}
	pre := make([]float64, n+1) // pre[t]: Σ|xi−xk| over i<k<t
	for t := 1; t < n; t++ {
		var s float64
		for i := 0; i < t; i++ {
			s += math.Abs(x[i] - x[t])
		}
		pre[t+1] = pre[t] + s
	}
	suf := make([]float64, n+1) // suf[t]: Σ|xi−xk| over t≤i<k
	for t := n - 2; t >= 0; t-- {
		var s float64
		for k := t + 1; k < n; k++ {
			s += math.Abs(x[t] - x[k])
		}
		suf[t] = suf[t+1] + s
	}
	total := pre[n]
	q = math.Inf(-1)
	for t := minSeg; t <= n-minSeg; t++ {
		m, k := float64(t), float64(n-t)
		between := total - pre[t] - suf[t]
		e := 2 * between / (m * k)
		if t >= 2 {
			e -= pre[t] / (m * (m - 1) / 2)
		}
		if n-t >= 2 {
			e -= suf[t] / (k * (k - 1) / 2)
		}
		if v := m * k / (m + k) * e; t == minSeg || v > q+1e-12*math.Abs(q) {
			tau, q = t, v
		}
	}
	return tau, q, !math.IsInf(q, -1)
}

// studentT is the two-sided p-value of the pooled-variance t-test between
// x and y, and the two means; 1 when there are fewer than three values or
// a side is empty. Equal-variance Student's t is used, not Welch's,
// because one side may hold a single night. inflate (1 when zero)
// multiplies the pooled variance.
func studentT(x, y []float64, inflate float64) (p, mx, my float64) {
	mx, sx := meanSD(x)
	my, sy := meanSD(y)
	nx, ny := float64(len(x)), float64(len(y))
	if nx == 0 || ny == 0 || nx+ny < 3 {
		return 1, mx, my
	}
	df := nx + ny - 2
	pooled := ((nx-1)*sx*sx + (ny-1)*sy*sy) / df
	if inflate > 0 {
		pooled *= inflate
	}
	diff := math.Abs(mx - my)
	if pooled == 0 {
		if diff == 0 {
			return 1, mx, my
		}
		return 0, mx, my
	}
	t := diff / math.Sqrt(pooled*(1/nx+1/ny))
	return 2 * studentSurvival(t, df), mx, my
}
