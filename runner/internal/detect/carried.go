package detect

import (
	"fmt"
	"math"
	"slices"

	"github.com/benchkite/benchkite/internal/numfmt"
)

const (
	// FixedNights is how many nights in a row an open regression carried
	// from night to night must pass before it counts as fixed: a single
	// good night of a regression that is still there is noise.
	FixedNights = 4
	// minCarryLevel is the fewest nights the level a regression is
	// judged against must come from for it to be carried: a level from
	// three nights of a fast pool is no reference to hold a month to.
	minCarryLevel = 10
	// goneP and fixedGoneP are the p-values of the nights since a
	// carried regression began, tonight with them, above which it is
	// gone: on any night, or on a night nearer the level before it.
	goneP, fixedGoneP = 0.5, 0.1
	// holdShare is the part of the false-alarm rate at which an open
	// regression's nights together hold it (Carried.Held), its level's
	// nights taken as one regime, as wide as they wander.
	holdShare = 0.2
	// heldP is the p-value of a held regression's nights together, tonight
	// with them, up to which tonight stays red: loose, since its nights
	// confirmed it already.
	heldP = 0.2
	// pendingNights and pendingP: an alarm its next nights have not
	// confirmed is over once pendingNights nights, its own included, have
	// passed and its nights together are no further off than pendingP.
	pendingNights, pendingP = 4, 0.05
)

// Carried is an open regression the night before handed on, so that a
// regression stays red until it is fixed or accepted however long that
// takes, not only while the nights before it are in the history.
type Carried struct {
	// Index is the first night of the regression, into the history
	// (negative when that night has left it; len(history) is tonight).
	Index int
	// Level is the log-scale level it is judged against: the baseline
	// on the night it was caught.
	Level float64
	// LevelNights is how many nights Level is the median of (0 when not
	// known): a level from a few nights is that much less sure, however
	// many nights have come since.
	LevelNights int
	// WorsePct is how much worse it was when caught, worse positive.
	WorsePct float64
	// Passed is how many nights in a row have looked fixed; it is closed
	// at FixedNights.
	Passed int
	// P is the smallest p-value its nights together have had against
	// Level, its level's nights taken as one regime: the evidence a
	// build's false-alarm budget weighs a held night by (0 before the
	// first).
	P float64
	// Held says its nights confirmed it: one of them was flagged, and
	// together they were below Level at a fifth of the false-alarm rate,
	// the level's nights taken as one regime. Only a fix, an acceptance
	// or nights no worse than chance end it then.
	Held bool
}

// knownAfter says a known change (an acceptance, a recipe change) came
// on or after night i: a regression carried from before it is settled.
func knownAfter(known []int, i int) bool {
	return slices.ContainsFunc(known, func(k int) bool { return k >= i && k > 0 })
}

// carriedWhy describes a carried regression for people.
func carriedWhy(c Carried, nights int) string {
	if c.Index >= 0 {
		return fmt.Sprintf("the regression of %.1f%% that began %d nights ago", c.WorsePct, nights-c.Index)
	}
	return fmt.Sprintf("the regression of %.1f%% that began before the %d nights of the history", c.WorsePct, nights)
}

// carried judges tonight while a regression carried from the night before
// is open: against the level before it, c.Level, however long ago that
// was. Until its nights hold it, it fails nothing and is over once they
// do not (openNight.pending); held, tonight is red while its nights,
// tonight with them, stay off that level (openNight.held). It is fixed
// once FixedNights nights in a row are nearer the level before it than
// the level since; a known change after it (an acceptance) has settled
// it already.
func carried(d Decision, hist []float64, ton float64, c Carried, nz noise, inflate, levelScale, dir float64, cfg Config) Decision {
	from := min(max(0, c.Index), len(hist))
	since := hist[from:]
	nz, inflate = sinceNoise(since, nz, inflate, cfg)
	if c.LevelNights > 0 {
		levelScale = max(levelScale, math.Sqrt(nz.sd*nz.sd*inflate*medianVar(c.LevelNights)))
	}
	bad := c.Level - dir*logWorse(c.WorsePct, dir)
	if len(since) > 0 {
		bad = median(since)
	}
	d.Open = nil
	d.Baseline = math.Exp(c.Level)
	d.DeltaPct = (math.Exp(ton-c.Level) - 1) * 100
	d.WorsePct = worsePct(dir*(c.Level-ton), dir)
	o := openNight{c: c, fixed: dir*(ton-(c.Level+bad)/2) > 0, nights: len(since) + 1}
	all := append(slices.Clone(since), ton)
	o.worse = worsePct(dir*(c.Level-median(all)), dir)
	spread := func(level float64, nz noise, inflate, levelScale float64) float64 {
		return tSurvival(dir*(level-median(all))/math.Sqrt(nz.sd*nz.sd*inflate*medianVar(len(all))+levelScale*levelScale), nz.nu)
	}
	o.p = spread(c.Level, nz, inflate, levelScale)
	// The nights before it, taken as one regime, however they wander,
	// judge how seldom its nights are this far off, from their own level
	// where that is nearer: a false alarm among wandering nights brings
	// its neighbours along, and the level it was caught against may be a
	// wander's.
	pre := hist[:from]
	level := c.Level
	if len(pre) >= minRhoNights && dir*(median(pre)-level) < 0 {
		level = median(pre)
	}
	bz, binfl, bls := beforeNoise(pre, nz, inflate, levelScale, cfg)
	pLevel := spread(level, bz, binfl, bls)
	o.pLevel = pLevel
	if !(o.c.P > 0) || pLevel < o.c.P {
		o.c.P = pLevel
	}
	o.small = o.worse < cfg.MinEffectPct
	// One carried past the history has outlived any unconfirmed alarm:
	// its nights held it, as summaries written before Held did.
	o.c.Held = o.c.Held || c.Index < 0
	if !o.c.Held && !o.fixed && confirming(c, cfg.Flagged) {
		o.c.Held = pLevel <= cfg.FalseAlarmRate*holdShare
	}
	if o.fixed {
		o.c.Passed++
	} else {
		o.c.Passed = 0
	}
	d.PNight = o.p
	if o.fixed && !o.c.Held {
		d.PNight = 1
	}
	o.base = fmt.Sprintf("tonight %s is %.1f%% %s than %s, the level before %s (noise CV %.1f%% from %d nights%s)",
		numfmt.Sig(d.Tonight, 4), math.Abs(d.WorsePct), worseWord(d.WorsePct), numfmt.Sig(d.Baseline, 4), carriedWhy(c, len(hist)), cvOf(nz.sd)*100, nz.used, rhoNote(nz.rho))
	if o.c.Held {
		return o.held(d)
	}
	o.expired = len(hist)-c.Index >= pendingNights && o.p > pendingP
	return o.pending(d, cfg.FalseAlarmRate)
}

// openNight is tonight judged against a carried regression: c as
// tonight hands it on, whether tonight is fixed-looking (nearer the
// level before than the level since), p, the p-value of its nights
// together, tonight with them, worse by worse percent, and pLevel, the
// same against the nights before it taken as one regime (what holds it).
type openNight struct {
	c                     Carried
	fixed, small, expired bool
	p, worse              float64
	pLevel                float64
	nights                int
	base                  string
}

// held judges tonight for a confirmed regression: red while its nights
// together stay off the level before, until FixedNights nights in a row
// look fixed or its nights are no worse than chance allows. A re-run of
// tonight cannot overturn it, so it raises no alarm.
func (o openNight) held(d Decision) Decision {
	since := fmt.Sprintf("worse than it by %.1f%% over the %d nights since it began, tonight with them", o.worse, o.nights)
	switch {
	case o.p > goneP || o.small:
		d.Why = fmt.Sprintf("not flagged: %s; with the nights since it is no worse than chance allows: gone", o.base)
		return d
	case o.fixed && o.c.Passed >= FixedNights:
		d.Why = fmt.Sprintf("fixed: %s; %d nights in a row have been nearer the level before it than the level since", o.base, o.c.Passed)
		return d
	}
	d.Carry = &o.c
	if o.p > heldP {
		d.Why = fmt.Sprintf("not flagged: %s; %s, within chance tonight (p %s > %s), so it stays open", o.base, since, numfmt.P(o.p), numfmt.Exact(heldP))
		return d
	}
	// A build's budget weighs a held night by the evidence that held it,
	// not by tonight's nights alone.
	d.Flagged, d.Held, d.Status, d.Rule, d.PNight = true, true, StatusFlagged, RuleOpen, o.c.P
	d.LastGood, d.FirstBad = o.c.Index-1, o.c.Index
	if o.fixed {
		d.Why = fmt.Sprintf("still regressed: %s; tonight is nearer the level before it, but it is fixed only once %d nights in a row are (%d so far): %s", o.base, FixedNights, o.c.Passed, since)
	} else {
		d.Why = fmt.Sprintf("still regressed: %s; it is neither fixed nor accepted: %s", o.base, since)
	}
	return d
}

// pending judges tonight for a regression its nights have not yet held:
// it fails nothing (tonight is judged as any night is as well) and is
// over once gone, fixed, or not confirmed in time.
func (o openNight) pending(d Decision, alpha float64) Decision {
	switch {
	case o.p > goneP || o.fixed && o.p > fixedGoneP || o.small:
		d.Why = fmt.Sprintf("not flagged: %s; with the nights since it is no worse than chance allows: gone", o.base)
		return d
	case o.expired:
		d.Why = fmt.Sprintf("not flagged: %s; the nights after its alarm did not confirm it (p %s of its %d nights together): over", o.base, numfmt.P(o.p), o.nights)
		return d
	case o.fixed && o.c.Passed >= FixedNights:
		d.Why = fmt.Sprintf("fixed: %s; %d nights in a row have been nearer the level before it than the level since", o.base, o.c.Passed)
		return d
	}
	d.Carry = &o.c
	if o.fixed {
		d.Why = fmt.Sprintf("fixed tonight: %s, nearer the level before it than the level since; it is closed once %d nights in a row are (%d so far)", o.base, FixedNights, o.c.Passed)
		return d
	}
	d.Why = fmt.Sprintf("not flagged: %s; it stays open until its nights confirm it (p %s of its %d nights together against the nights before it; held at %s)", o.base, numfmt.P(o.pLevel), o.nights, numfmt.Exact(alpha*holdShare))
	return d
}

// sinceNoise is the noise a carried regression's nights are judged
// with: the history's, or their own where that is wider or more
// autocorrelated. A wander the change-point search cut into regimes
// leaves the nights within them too quiet and too independent; the
// regression's own nights, taken as one, show the wander.
func sinceNoise(since []float64, nz noise, inflate float64, cfg Config) (noise, float64) {
	nz, inflate, _ = widerNoise(since, nz, inflate, cfg)
	return nz, inflate
}

// beforeNoise is the noise of the nights before a carried regression,
// taken as one regime, where that is wider than the history's, and the
// spread of their median: its level is that median, so it wanders as
// they do, however the change-point search cut them.
func beforeNoise(pre []float64, nz noise, inflate, levelScale float64, cfg Config) (noise, float64, float64) {
	if slices.ContainsFunc(cfg.Known, func(i int) bool { return i > 0 && i < len(pre) }) {
		return nz, inflate, levelScale
	}
	out, infl, ok := widerNoise(pre, nz, inflate, cfg)
	if !ok {
		return nz, inflate, levelScale
	}
	return out, infl, max(levelScale, math.Sqrt(out.sd*out.sd*medianVar(len(pre))*infl))
}

// widerNoise is nz widened by the noise of nights taken as one regime,
// where there are enough of them to tell: the wider spread, the larger
// autocorrelation and the fewer degrees of freedom of the two, and the
// inflation that autocorrelation asks for; ok says nights were enough.
func widerNoise(nights []float64, nz noise, inflate float64, cfg Config) (out noise, infl float64, ok bool) {
	if len(nights) < minRhoNights {
		return nz, inflate, false
	}
	own := noiseOf(nights, nil, cfg)
	if own.df < 2 {
		return nz, inflate, false
	}
	out = nz
	out.sd = max(nz.sd, own.sd)
	out.rho = max(nz.rho, own.rho)
	out.nu = min(nz.nu, own.nu)
	return out, max(inflate, (1+out.rho)/(1-out.rho)), true
}

// confirming says one of a carried regression's nights was flagged (an
// unconfirmed first night is not): only then may its nights together
// hold it.
func confirming(c Carried, flagged []int) bool {
	return c.Index < 0 || slices.ContainsFunc(flagged, func(i int) bool { return i >= c.Index })
}
