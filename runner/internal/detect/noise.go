package detect

import (
	"math"
	"slices"
)

// noise is the night-to-night spread of a history around its regimes.
type noise struct {
	// rho is the upper end of the autocorrelation's 80 % interval: a
	// month of nights estimates it roughly, and too small a ρ makes a
	// wander look like a change and narrows the bounds.
	sd, rho float64
	df      int
	// nu is the degrees of freedom the bounds use: df, fewer where the
	// nights are autocorrelated or heavier-tailed than normal, either of
	// which makes sd a rougher estimate.
	nu             float64
	used, outliers int
}

// noiseBefore is the noise of every night but the last. The night before
// tonight is the first night of a step that was not caught at once; in
// the estimate it would widen tonight's bounds by the step itself.
// Leaving it out always, not only when it looks worse, keeps the
// estimate unbiased on unchanged nights. A young recipe, with fewer than
// leaveOutFrom nights, keeps every night, one more matters more there,
// unless the nights before tonight are the first of a gross step
// (youngStep).
func noiseBefore(hist []float64, cs []Change, cfg Config) noise {
	if len(hist) < leaveOutFrom && !youngStep(hist, cfg) {
		return noiseOf(hist, cs, cfg)
	}
	n := len(hist) - 1
	var kept []Change
	for _, c := range cs {
		if c.Index < n {
			kept = append(kept, c)
		}
	}
	return noiseOf(hist[:n], kept, cfg)
}

// youngStep says the nights the gate flagged last in a young history, a
// run of them up to the night before tonight, lie more than twice
// cfg.GrossMADs standard deviations of the nights before them from their
// mean (twice, since a young history's spread is rough and heavy-tailed
// nights reach one gross outlier's distance): the first nights of a step such as a halving, which in the
// estimate would widen the next nights' bounds past the step itself and
// turn them green. Ordinary alarms stay in, as every night does while
// the history is young.
func youngStep(hist []float64, cfg Config) bool {
	n := len(hist)
	if cfg.GrossMADs <= 0 || !slices.Contains(cfg.Flagged, n-1) {
		return false
	}
	first := n - 1
	for first > n-MinSegment && slices.Contains(cfg.Flagged, first-1) {
		first--
	}
	if first < 3 {
		return false
	}
	m, sd := meanSD(hist[:first])
	run, _ := meanSD(hist[first:])
	return sd > 0 && math.Abs(run-m) > 2*cfg.GrossMADs*sd
}

// noiseOf pools every regime's nights around its own mean. From
// cfg.RejectFrom nights on, nights beyond cfg.OutlierMADs robust standard
// deviations of their regime's median are set aside first. The lag-1
// autocorrelation of the residuals (bias-corrected, within regimes) is
// kept when positive and the history has at least minRhoNights nights.
func noiseOf(hist []float64, cs []Change, cfg Config) noise {
	bounds := []int{0}
	for _, c := range cs {
		bounds = append(bounds, c.Index)
	}
	bounds = append(bounds, len(hist))
	reject := cfg.OutlierMADs > 0 && len(hist) >= cfg.RejectFrom
	var ss, ss4, lag, lag0 float64
	var nz noise
	segs := 0
	for i := 0; i+1 < len(bounds); i++ {
		seg := hist[bounds[i]:bounds[i+1]]
		kept := seg
		if reject {
			kept = keep(seg, cfg.OutlierMADs)
		}
		nz.outliers += len(seg) - len(kept)
		if len(kept) == 0 {
			continue
		}
		segs++
		m, _ := meanSD(kept)
		for j, v := range kept {
			r := v - m
			ss += r * r
			ss4 += r * r * r * r
			if j > 0 {
				lag += r * (kept[j-1] - m)
				lag0 += r * r
			}
		}
		nz.used += len(kept)
	}
	nz.df = nz.used - segs
	if nz.df < 1 {
		return nz
	}
	nz.sd = math.Sqrt(ss / float64(nz.df))
	if nz.used >= minRhoNights && lag0 > 0 {
		r := lag / lag0
		r += (1 + 3*r) / float64(nz.used) // Kendall's bias correction
		// The correction can push a few trending nights past 1, where
		// the interval below has no real value (and max(NaN, 0) is NaN).
		r = min(r, 0.9)
		if r > 0 {
			// The upper end of ρ's one-sided 80 % interval: ρ from a
			// month of nights is rough, and too small a ρ is a false
			// alarm. The 90 % end held AR(1) nights well under the rate
			// and cost AR(1) power a tenth (`runner calibrate`).
			r = min(0.9, r+0.8416*math.Sqrt((1-r*r)/float64(nz.used)))
		}
		nz.rho = min(max(r, 0), 0.9)
		// Autocorrelated nights' sample variance falls short of theirs.
		n := float64(nz.used)
		nz.sd /= math.Sqrt(max(0.5, 1-2*nz.rho/(n*(1-nz.rho))))
	}
	nz.nu = max(minNu, effectiveDF(nz.df, nz.used, ss, ss4, nz.rho))
	return nz
}

// minNu is the fewest degrees of freedom the bounds use. A few young
// nights that happen to trend read as ρ near its cap, whose effective
// degrees of freedom fall below one: a t-bound that wide lets a halving
// of one-percent nights pass. ρ is already taken at the upper end of
// its interval, which widens the bounds once; two degrees of freedom
// keep them wide without counting it twice, and left the false alarms
// of `runner calibrate` unchanged (Student's t, AR(1), 2000 trials,
// seeds 1 to 3).
const minNu = 2

// effectiveDF is the degrees of freedom of a variance estimate from n
// residuals (df of them free) with sums of squares ss and fourth powers
// ss4 and lag-1 autocorrelation rho: those of the chi-square whose
// relative variance it has, 2/df·(1+ρ²)/(1−ρ²) + κ/n for excess kurtosis
// κ (its small-sample normal value taken off, never below zero). Heavy
// tails show here: a month of Student-t nights has a kurtosis of several,
// and the bound then widens as far as the estimate is rough.
func effectiveDF(df, n int, ss, ss4, rho float64) float64 {
	rel := 2 / float64(df) * (1 + rho*rho) / (1 - rho*rho)
	if n >= 4 && ss > 0 {
		fn := float64(n)
		b2 := fn * ss4 / (ss * ss)
		kappa := max(0, b2-3*(fn-1)/(fn+1))
		rel += kappa / fn
	}
	return 2 / rel
}

// keep returns the values of x within k robust standard deviations of
// its median.
func keep(x []float64, k float64) []float64 {
	med := median(x)
	dev := make([]float64, len(x))
	for i, v := range x {
		dev[i] = math.Abs(v - med)
	}
	scale := 1.4826 * median(dev)
	if scale == 0 {
		return x
	}
	out := make([]float64, 0, len(x))
	for i, v := range x {
		if dev[i] <= k*scale {
			out = append(out, v)
		}
	}
	return out
}

const (
	// eraNights is the fewest nights (before tonight's eve) of the newest
	// regime from which its own noise is used when it differs from the
	// older regimes' by more than eraRatio either way: a fleet or image
	// change that makes nights several times quieter or noisier would
	// otherwise be judged by the old noise for a month.
	eraNights = 10
	eraRatio  = 2
)

// eraNoise is nz, or the noise of the newest regime alone when it has
// eraNights nights and is more than eraRatio times quieter or noisier
// than the nights before it.
func eraNoise(hist []float64, cs []Change, cfg Config, nz noise) noise {
	n := len(hist) - 1 // the night before tonight is left out (noiseBefore)
	if len(hist) < DefaultRejectFrom || len(cs) == 0 {
		return nz
	}
	last := cs[len(cs)-1].Index
	if n-last < eraNights {
		return nz
	}
	newer := noiseOf(hist[last:n], nil, cfg)
	older := noiseOf(hist[:last], cs[:len(cs)-1], cfg)
	if newer.df < 2 || older.df < 2 || !(older.sd > 0) {
		return nz
	}
	if r := newer.sd / older.sd; r < 1/float64(eraRatio) || r > eraRatio {
		newer.outliers += nz.outliers
		return newer
	}
	return nz
}
