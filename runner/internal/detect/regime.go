package detect

import (
	"math"
	"slices"
)

// regime picks the nights tonight is judged against, [start, end): after
// the newest known change or improvement. A worsening is no new level:
// the nights before it stay the level, so small drops cannot add up
// unseen; one beyond the floor is an open regression.
func regime(hist []float64, cs []Change, dir, floor float64) (start, end int, open *Open) {
	end = len(hist)
	for i := len(cs) - 1; i >= 0; i-- {
		c := cs[i]
		prevStart := 0
		if i > 0 {
			prevStart = cs[i-1].Index
		}
		if c.Known {
			return c.Index, end, open
		}
		w := worsePct(dir*(median(hist[prevStart:c.Index])-median(hist[c.Index:end])), dir)
		if w <= 0 {
			return c.Index, end, open
		}
		if open == nil && w >= floor {
			open = &Open{Index: c.Index, WorsePct: w, P: c.P, Flags: c.Flags}
		}
		end = c.Index
	}
	return 0, end, open
}

// withFlaggedRun adds to the changes the search found one where a run
// of flagged nights begins: two of the last three nights flagged by the
// gate (by chance alone, a few nights in ten thousand) are a regression
// until it is fixed or accepted, though they are too few for the search
// to see. Their nights then neither set the level nor widen the noise.
// When the newest change the search found is a worsening, it already
// holds them.
func withFlaggedRun(cs []Change, hist []float64, flagged []int, dir float64) []Change {
	n := len(hist)
	var recent []int
	for _, i := range flagged {
		if i >= n-3 && i < n {
			recent = append(recent, i)
		}
	}
	if len(recent) < 2 {
		return cs
	}
	from := slices.Min(recent)
	if k := len(cs); k > 0 && (cs[k-1].Index >= from-1 || dir*(cs[k-1].After-cs[k-1].Before) < 0) {
		return cs
	}
	before, after := hist[:from], hist[from:]
	if len(cs) > 0 {
		before = hist[cs[len(cs)-1].Index:from]
	}
	mb, _ := meanSD(before)
	ma, _ := meanSD(after)
	if dir*(ma-mb) >= 0 {
		return cs // no worse than before them after all: no new level either
	}
	return append(cs, Change{Index: from, P: 1, Before: mb, After: ma, Flags: true})
}

// confirmed says an open regression may keep nights red: one of its
// nights, or the night before it (the change may have begun a night
// earlier than the search puts it), was flagged; without the gate's past
// verdicts, it is at least as large as the single-night bound.
func confirmed(open *Open, flagged []int, bound float64) bool {
	if flagged == nil {
		return open.WorsePct >= bound
	}
	return slices.ContainsFunc(flagged, func(i int) bool { return i >= open.Index-1 })
}

// stillRegressed judges an open regression that began at index from:
// tonight counts as still regressed unless it is nearer the good level
// than the median of the nights since the change (fixed, then), and p is
// then the chance of the nights since the change and tonight, taken
// together, lying as far below the good level (variance s2i a night, the
// level's own uncertainty in levelScale) were nothing wrong. worse is
// their median's worsening.
func stillRegressed(hist []float64, from int, level, ton, s2i, levelScale, nu, dir float64) (p, worse float64, ok bool) {
	since := append(slices.Clone(hist[from:]), ton)
	bad := median(since[:len(since)-1])
	if dir*(ton-(level+bad)/2) > 0 {
		return 1, 0, false // nearer the good level: fixed
	}
	worse = dir * (level - median(since))
	return tSurvival(worse/math.Sqrt(s2i*medianVar(len(since))+levelScale*levelScale), nu), worse, true
}

// culpritOfChange bounds a change found in the history at index i:
// the night before and the night of it, widened by one night each side
// when its significance is weak.
func culpritOfChange(i int, p float64, n int) (lastGood, firstBad int, widened bool) {
	lastGood, firstBad = i-1, i
	if p > 1e-6 {
		lastGood, firstBad, widened = max(0, i-2), min(n, i+1), true
	}
	return lastGood, firstBad, widened
}
