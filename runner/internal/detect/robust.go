package detect

import (
	"math"
	"slices"
)

const (
	// DefaultGrossMADs is how far from its neighbours, in robust
	// night-to-night standard deviations, a night is a gross outlier:
	// real histories have them on a few nights in a hundred (a slow
	// machine, a noisy neighbour), a re-run on the same machine repeats
	// them, and one of them in the spread would widen every bound for a
	// month.
	DefaultGrossMADs = 5
	// grossFrom is the fewest nights from which gross outliers are set
	// aside: with fewer the robust spread is too rough to tell.
	grossFrom = leaveOutFrom
	// grossNeighbours is how many nights on each side a night is
	// compared with: their median is robust to one or two more outliers
	// and follows a level shift within a few nights.
	grossNeighbours = 3
	// spikeMargin is how much further than a gross night tonight must be
	// to wait for confirmation: a step of three times the noise is that
	// far out on its first night one time in a thousand (5: one in 40).
	spikeMargin = 1
)

// robustSD is the robust night-to-night standard deviation of a log
// series, 1.4826·MAD(Δ)/√2 over the steps within the known regimes: level
// shifts touch one step each and do not move it.
func robustSD(hist []float64, known []int) float64 {
	var d []float64
	for i := 1; i < len(hist); i++ {
		if !slices.Contains(known, i) {
			d = append(d, hist[i]-hist[i-1])
		}
	}
	if len(d) == 0 {
		return 0
	}
	m := median(d)
	for i := range d {
		d[i] = math.Abs(d[i] - m)
	}
	return 1.4826 * median(d) / math.Sqrt2
}

// grossNights marks the nights of hist further than k robust standard
// deviations from the median of their neighbours within the same known
// regime (tonight, ton, counts as a neighbour of the last nights). The
// spread is local, that of the nights around each (localSD): eras whose
// noise differs severalfold share a history, and a quiet era's spread
// would set a noisy era's ordinary nights aside.
func grossNights(hist []float64, ton float64, known []int, k float64) []bool {
	n := len(hist)
	out := make([]bool, n)
	if k <= 0 {
		return out
	}
	all := append(slices.Clone(hist), ton)
	lo := segStarts(n, known)
	// The local spread, or the whole history's where that is wider: a
	// dozen nights' MAD can come out well short.
	global := robustSD(hist, known)
	nb := make([]float64, 0, 2*grossNeighbours)
	for i := range n {
		nb = nb[:0]
		for j := max(lo[i], i-grossNeighbours); j <= min(n, i+grossNeighbours); j++ {
			if j != i && lo[j] == lo[i] {
				nb = append(nb, all[j])
			}
		}
		sd := max(localSD(hist, lo, i), global)
		if len(nb) >= 2 && sd > 0 && math.Abs(hist[i]-median(nb)) > k*sd {
			out[i] = true
		}
	}
	return out
}

// segStarts is, for each night of n and tonight, the first night of its
// known regime.
func segStarts(n int, known []int) []int {
	lo := make([]int, n+1)
	for i := 1; i <= n; i++ {
		lo[i] = lo[i-1]
		if slices.Contains(known, i) {
			lo[i] = i
		}
	}
	return lo
}

// localWidth is how many nights on each side localSD looks at.
const localWidth = 8

// localSD is the robust night-to-night spread (robustSD) of the nights
// within localWidth of night i (i = len(hist) for tonight) in its known
// regime, or of the whole regime when that leaves too few.
func localSD(hist []float64, lo []int, i int) float64 {
	a, b := max(lo[i], i-localWidth), min(len(hist), i+localWidth+1)
	for b < len(hist) && lo[b] == lo[i] && b-a < 2*localWidth+1 {
		b++
	}
	for a > lo[i] && b-a < 2*localWidth+1 {
		a--
	}
	for b > a && lo[b-1] != lo[i] {
		b--
	}
	if b-a < grossFrom {
		return 0
	}
	return robustSD(hist[a:b], nil)
}

// kept maps a history with some nights set aside onto the nights kept.
type kept struct {
	orig []int // orig[j] is kept night j's index into the history
	n    int   // the history's length
}

// to is the kept index of history index i: the first kept night at or
// after it (len(kept) for tonight).
func (k kept) to(i int) int {
	j, _ := slices.BinarySearch(k.orig, i)
	return j
}

// from is the history index of kept index j (the history's length for
// tonight).
func (k kept) from(j int) int {
	switch {
	case j < 0:
		return j
	case j >= len(k.orig):
		return k.n + (j - len(k.orig))
	}
	return k.orig[j]
}

func (k kept) toAll(idx []int) []int {
	if idx == nil {
		return nil
	}
	out := []int{}
	for _, i := range idx {
		if j, ok := slices.BinarySearch(k.orig, i); ok {
			out = append(out, j)
		}
	}
	return out
}

// knownTo maps known change points: a change at a night set aside starts
// at the next night kept.
func (k kept) knownTo(idx []int) []int {
	var out []int
	for _, i := range idx {
		if j := k.to(i); j > 0 && j < len(k.orig) && !slices.Contains(out, j) {
			out = append(out, j)
		}
	}
	return out
}

// setAside judges tonight against the nights of history that are not
// gross outliers: the spread, the autocorrelation, the change-point
// search and the level all see the kept nights only, and every index of
// the decision is mapped back to the history.
func setAside(hist, reps []float64, fresh int, cfg Config) (Decision, error) {
	gross, sd := grossOf(hist, median(reps), cfg)
	if !slices.Contains(gross, true) {
		return judge(hist, reps, fresh, cfg, sd)
	}
	k, clean := keptOf(hist, gross)
	c := k.config(cfg, hist, gross)
	d, err := judge(clean, reps, fresh, c, sd)
	if err != nil {
		return d, err
	}
	d.Nights = len(hist)
	d.Outliers += len(hist) - len(clean)
	if d.Status == StatusInsufficientHistory {
		return d, nil
	}
	k.back(&d)
	if n := len(hist); d.Flagged && d.Rule != RuleOpen && gross[n-1] && c.prevBad {
		// Tonight confirms the spike of the night before: the
		// regression began that night.
		d.LastGood, d.FirstBad, d.Widened = n-2, n-1, false
		if d.Carry != nil {
			d.Carry.Index = n - 1
		}
	}
	return d, nil
}

// grossOf marks the gross outliers among the nights of hist, tonight
// (ton) counted as a neighbour, and returns the robust spread of the
// nights around tonight; nothing is marked and the spread is 0 when
// gross outliers are not set aside or the history is too short to tell.
func grossOf(hist []float64, ton float64, cfg Config) (gross []bool, sd float64) {
	if !(cfg.GrossMADs > 0 && len(hist) >= grossFrom) {
		return nil, 0
	}
	gross = grossNights(hist, ton, cfg.Known, cfg.GrossMADs)
	// A night the gate flagged is a regression's, not noise: its
	// evidence stays.
	for _, i := range cfg.Flagged {
		if i >= 0 && i < len(gross) {
			gross[i] = false
		}
	}
	return gross, localSD(hist, segStarts(len(hist), cfg.Known), len(hist))
}

// keptOf is the map from the nights of hist not marked gross onto the
// history, and those nights.
func keptOf(hist []float64, gross []bool) (kept, []float64) {
	k := kept{n: len(hist)}
	var clean []float64
	for i, g := range gross {
		if !g {
			k.orig = append(k.orig, i)
			clean = append(clean, hist[i])
		}
	}
	return k, clean
}

// config is cfg with its indexes into hist mapped onto the nights kept,
// the gross ones set aside.
func (k kept) config(cfg Config, hist []float64, gross []bool) Config {
	c := cfg
	c.Known = k.knownTo(cfg.Known)
	c.Flagged = k.toAll(cfg.Flagged)
	c.Unconfirmed = k.toAll(cfg.Unconfirmed)
	if cfg.Carried != nil {
		cc := *cfg.Carried
		if cc.Index >= 0 {
			cc.Index = k.to(cc.Index)
		}
		c.Carried = &cc
	}
	c.prevBad = prevWasBad(hist, gross, cfg) || cfg.prevBad
	return c
}

// prevWasBad says the night before tonight was flagged or an unconfirmed
// spike: it decides whether a spike tonight is confirmed, and still says
// so when it is set aside.
func prevWasBad(hist []float64, gross []bool, cfg Config) bool {
	n := len(hist)
	if cfg.Flagged == nil && gross[n-1] {
		// Without past verdicts, a gross night before tonight on the
		// worse side confirms tonight.
		return cfg.direction()*(median(hist[max(0, n-1-grossNeighbours):n-1])-hist[n-1]) > 0
	}
	return slices.Contains(cfg.Flagged, n-1) || slices.Contains(cfg.Unconfirmed, n-1)
}

// back maps the indexes of d, a decision on the nights kept, back onto
// the history.
func (k kept) back(d *Decision) {
	for i := range d.Changes {
		d.Changes[i].Index = k.from(d.Changes[i].Index)
	}
	d.RegimeStart = k.from(d.RegimeStart)
	if d.Open != nil {
		d.Open.Index = k.from(d.Open.Index)
	}
	if d.Carry != nil {
		d.Carry.Index = k.from(d.Carry.Index)
	}
	if d.Flagged {
		d.LastGood, d.FirstBad = k.from(d.LastGood), k.from(d.FirstBad)
	}
}

// spike says tonight is a gross outlier of the worse kind that nothing
// before it confirms: worse than the level and than the last nights by
// more than GrossMADs+spikeMargin robust standard deviations, and the night before
// was neither flagged nor itself such a spike. A re-run on the same
// machine repeats a slow machine's night, so it cannot tell one from a
// slow build; the next night can.
func spike(hist []float64, ton, worse, sd, dir float64, cfg Config) bool {
	n := len(hist)
	k := cfg.GrossMADs + spikeMargin
	if cfg.OneShot || cfg.GrossMADs <= 0 || sd <= 0 || n < grossFrom || worse <= k*sd {
		return false
	}
	if dir*(median(hist[n-grossNeighbours:])-ton) <= k*sd {
		return false // in line with the last nights: a level, not a spike
	}
	prev := n - 1
	return !cfg.prevBad && !slices.Contains(cfg.Flagged, prev) && !slices.Contains(cfg.Unconfirmed, prev)
}
