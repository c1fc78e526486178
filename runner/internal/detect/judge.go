package detect

import (
	"fmt"
	"math"
	"slices"

	"github.com/benchkite/benchkite/internal/numfmt"
)

// judging is tonight as judge sees it: the nights and tonight, and what
// each step of the judgement has found so far.
type judging struct {
	hist, reps []float64
	fresh      int
	cfg        Config
	rsd        float64
	// ton is tonight's log-scale value; dir is 1 when higher is better,
	// −1 when lower is.
	ton, dir float64
	nz       noise
	// start and end bound the regime tonight is judged against, [start,
	// end); open is the regression found in the history that is open.
	start, end int
	open       *Open
	// level is the regime's median and worse tonight's worsening from
	// it, both on the log scale.
	level, worse float64
	// s2 is a night's variance, inflate the factor the autocorrelation
	// widens a level's variance by, tonVar tonight's own variance.
	s2, inflate, tonVar float64
	// rule is the rule tonight's p-value comes from; twoWhy says, for
	// the two-night rule, what the night before adds.
	rule, twoWhy string
	// pastFloor: tonight is worse than the floor; flagged: and its
	// p-value is within the false-alarm rate; unconfirmed: the open
	// regression was never confirmed by a flagged night; stillWorse:
	// tonight is not nearer the level before the open regression than
	// its own level, whether or not its nights are significant.
	pastFloor, flagged, unconfirmed, stillWorse bool
}

// judge is detect on log-scale nights, gross outliers already set aside;
// rsd is the robust night-to-night spread of every night given (0 when
// too few to tell).
func judge(hist, reps []float64, fresh int, cfg Config, rsd float64) (Decision, error) {
	j := &judging{hist: hist, reps: reps, fresh: fresh, cfg: cfg, rsd: rsd, ton: median(reps), dir: cfg.direction()}
	d := Decision{Status: StatusOK, Nights: len(hist), Reps: len(reps), PNight: 1, P: 1}
	d.Tonight = math.Exp(j.ton)
	d.Changes, j.nz = j.regimes()
	d.Used, d.Outliers, d.Autocorr, d.nu = j.nz.used, j.nz.outliers, j.nz.rho, j.nz.nu
	if j.nz.df < 2 {
		d.Status = StatusInsufficientHistory
		d.Why = fmt.Sprintf("first nights: no regression check yet (%d past nights, in %d regimes, leave too few to estimate the noise)", len(hist), len(d.Changes)+1)
		return d, nil
	}
	j.againstRegime(&d)
	j.bounds(&d)
	j.stillOpen(&d)
	if c := cfg.Carried; c != nil && !knownAfter(cfg.Known, c.Index) {
		return j.besideCarried(d, *c)
	}
	return j.verdict(d), nil
}

// regimes segments the history, estimates the autocorrelation within
// the regimes, and segments again allowing for it: autocorrelated
// nights wander, and a wander is not a change. It returns the changes
// and the noise around the regimes they bound.
func (j *judging) regimes() ([]Change, noise) {
	hist, cfg := j.hist, j.cfg
	search := Search{Alpha: cfg.ChangeAlpha, MinSegment: MinSegment, Known: cfg.Known, Scan: true}
	if c := cfg.Carried; c != nil && c.Index > 0 && c.Index < len(hist) && !knownAfter(cfg.Known, c.Index) {
		// Where a regression carried on began is known: the step is no
		// part of the noise.
		search.Known = append(slices.Clone(cfg.Known), c.Index)
	}
	cs := withFlaggedRun(search.Find(hist), hist, cfg.Flagged, j.dir)
	nz := noiseBefore(hist, cs, cfg)
	if nz.rho > 0 {
		search.Inflate = (1 + nz.rho) / (1 - nz.rho)
		cs = withFlaggedRun(search.Find(hist), hist, cfg.Flagged, j.dir)
		nz = noiseBefore(hist, cs, cfg)
	}
	return cs, eraNoise(hist, cs, cfg, nz)
}

// againstRegime sets the regime tonight is judged against, its level,
// and tonight's change from it.
func (j *judging) againstRegime(d *Decision) {
	j.start, j.end, j.open = regime(j.hist, d.Changes, j.dir, j.cfg.MinEffectPct)
	d.RegimeStart, d.RegimeNights, d.Open = j.start, j.end-j.start, j.open
	j.level = median(j.hist[j.start:j.end])
	d.Baseline = math.Exp(j.level)
	d.NoiseCV = cvOf(j.nz.sd)
	d.DeltaPct = (math.Exp(j.ton-j.level) - 1) * 100
	j.worse = j.dir * (j.level - j.ton)
	d.WorsePct = worsePct(j.worse, j.dir)
}

// bounds sets tonight's p-value and threshold by the single-night rule,
// and its p-value by the two-night rule where that one's is smaller
// (weighted Bonferroni: each rule spends its share of the rate).
func (j *judging) bounds(d *Decision) {
	nz, cfg := j.nz, j.cfg
	j.s2 = nz.sd * nz.sd
	j.inflate = (1 + nz.rho) / (1 - nz.rho)
	j.tonVar = nightVar(j.s2, j.reps, j.reps[j.fresh:], cfg.PastReps)
	w1 := 1.0
	if !cfg.SingleNightOnly {
		w1 = 1 - DefaultTwoNightShare
	}
	alpha := cfg.FalseAlarmRate
	scale1 := math.Sqrt(j.tonVar + j.s2*medianVar(j.end-j.start)*j.inflate)
	p1 := tSurvival(j.worse/scale1, nz.nu)
	d.NoiseThresholdPct = worsePct(tQuantile(1-alpha*w1, nz.nu)*scale1, j.dir)
	d.ThresholdPct = max(d.NoiseThresholdPct, cfg.MinEffectPct)
	d.PNight = min(1, p1/w1)
	j.rule = RuleSingle
	if !cfg.SingleNightOnly && j.open == nil && j.end == len(j.hist) && j.end-j.start >= 2 {
		if p2, why := twoNight(j.hist[j.start:j.end], j.ton, j.tonVar, nz, j.dir, alpha*w1); p2/(1-w1) < d.PNight {
			d.PNight, j.rule, j.twoWhy = min(1, p2/(1-w1)), RuleTwoNight, why
		}
	}
}

// levelScale is the standard deviation of the regime's level, the
// autocorrelation allowed for.
func (j *judging) levelScale() float64 {
	return math.Sqrt(j.s2 * medianVar(j.end-j.start) * j.inflate)
}

// stillOpen decides whether tonight is flagged. A regression stays red
// until it is fixed or accepted: judged on its nights and tonight
// together, not on tonight alone, which a drop of three times the noise
// passes one night in four. It is one the gate confirmed: the search
// found it in the history and the gate flagged one of its nights, or,
// until the search can see it, the gate flagged two of the last three
// nights (withFlaggedRun).
func (j *judging) stillOpen(d *Decision) {
	alpha, floor := j.cfg.FalseAlarmRate, j.cfg.MinEffectPct
	j.pastFloor = d.WorsePct >= floor
	j.flagged = d.PNight <= alpha && j.pastFloor
	j.unconfirmed = j.open != nil && !confirmed(j.open, j.cfg.Flagged, d.NoiseThresholdPct)
	if j.open == nil || j.unconfirmed || j.flagged {
		return
	}
	p, worse, ok := stillRegressed(j.hist, j.open.Index, j.level, j.ton, j.s2*j.inflate, j.levelScale(), j.nz.nu, j.dir)
	j.stillWorse = ok
	if ok && p <= alpha && worsePct(worse, j.dir) >= floor {
		d.PNight, j.flagged, j.pastFloor = p, true, true
	}
}

// besideCarried judges tonight while the regression c, carried from the
// night before, is open: red for it, or, when not, judged as any night
// is, since tonight may still be a new one.
func (j *judging) besideCarried(d Decision, c Carried) (Decision, error) {
	cd := carried(d, j.hist, j.ton, c, j.nz, j.inflate, j.levelScale(), j.dir, j.cfg)
	if cd.Flagged {
		return cd, nil
	}
	plain := j.cfg
	plain.Carried = nil
	nd, err := judge(j.hist, j.reps, j.fresh, plain, j.rsd)
	if err != nil {
		return nd, err
	}
	return newOrCarried(nd, cd), nil
}

// newOrCarried picks between tonight judged as any night is, nd, and
// judged against the regression carried, cd (not red for it): a new
// regression, an unconfirmed spike or an alarm is nd's verdict, with the
// carried regression handed on (an alarm is run again, and the second
// look may flag what cd alone would pass); anything else is cd's.
func newOrCarried(nd, cd Decision) Decision {
	switch {
	case nd.Flagged && cd.Carry != nil:
		c := *cd.Carry
		c.Passed = 0
		nd.Carry = &c // the older reference stands
		return nd
	case nd.Flagged || nd.Unconfirmed || nd.Alarm:
		if !nd.Flagged {
			nd.Carry = cd.Carry
		}
		return nd
	}
	return cd
}

// verdict completes the decision once its p-value is known: the alarm,
// the flag, and why.
func (j *judging) verdict(d Decision) Decision {
	d.Alarm = d.PNight <= j.cfg.FalseAlarmRate*AlarmFactor && j.pastFloor
	if !j.pastFloor {
		d.PNight = 1 // never fails, so it spends none of a build's budget
	}
	base := j.describe(d)
	switch {
	case j.open != nil:
		return j.openVerdict(d, base)
	case j.flagged && spike(j.hist, j.ton, j.worse, max(j.rsd, j.nz.sd), j.dir, j.cfg):
		return j.spikeVerdict(d, base)
	case j.flagged:
		return j.flag(d, base)
	}
	return j.notFlagged(d, base)
}

// describe says, for people, tonight against the baseline and the noise.
func (j *judging) describe(d Decision) string {
	return fmt.Sprintf("tonight %s is %.1f%% %s than the baseline %s (median of %d nights%s; noise CV %.1f%% from %d nights%s)",
		numfmt.Sig(d.Tonight, 4), math.Abs(d.WorsePct), worseWord(d.WorsePct), numfmt.Sig(d.Baseline, 4), j.end-j.start, regimeNote(d, len(j.hist)), d.NoiseCV*100, j.nz.used, rhoNote(j.nz.rho))
}

// openVerdict is the decision while a regression found in the history
// is open: still regressed, never confirmed, or fixed.
func (j *judging) openVerdict(d Decision, base string) Decision {
	open, n := j.open, len(j.hist)
	seen := "(p " + numfmt.P(open.P) + ")"
	if open.Flags {
		seen = "(the gate flagged two of the last three nights)"
	}
	switch {
	case j.flagged:
		d.Flagged, d.Status, d.Rule = true, StatusFlagged, RuleOpen
		d.LastGood, d.FirstBad, d.Widened = culpritOfChange(open.Index, open.P, n)
		if j.end-j.start >= minCarryLevel {
			d.Carry = &Carried{Index: open.Index, Level: j.level, LevelNights: j.end - j.start, WorsePct: open.WorsePct}
		}
		d.Why = fmt.Sprintf("still regressed: %s; the regression of %.1f%% that began %d nights ago %s is neither fixed nor accepted", base, open.WorsePct, n-open.Index, seen)
	case j.unconfirmed:
		d.Open = nil
		d.Why = fmt.Sprintf("not flagged: %s; the drop of %.1f%% the history shows %d nights ago %s was never confirmed by a flagged night", base, open.WorsePct, n-open.Index, seen)
	case j.stillWorse:
		d.Why = fmt.Sprintf("not flagged: %s; the regression of %.1f%% that began %d nights ago is still there, tonight nearer its level than the level before it, but its nights together are within what the noise allows", base, open.WorsePct, n-open.Index)
	default:
		d.Why = fmt.Sprintf("fixed: %s; the regression of %.1f%% that began %d nights ago is gone: tonight is nearer the level before it", base, open.WorsePct, n-open.Index)
	}
	return d
}

// spikeVerdict is the decision on a night flagged but grossly off with
// nothing before it to confirm it (spike): unconfirmed, for the next
// night to decide.
func (j *judging) spikeVerdict(d Decision, base string) Decision {
	cfg := j.cfg
	d.Unconfirmed, d.Alarm = true, false
	d.Why = fmt.Sprintf("unconfirmed (p %s ≤ %s): %s, beyond the %s%% floor, but more than %s robust standard deviations off with no night before it as bad: one night of a slow machine looks like this, and a re-run on it repeats it; the next night confirms it or not",
		numfmt.P(d.PNight), numfmt.Exact(cfg.FalseAlarmRate), base, numfmt.Exact(cfg.MinEffectPct), numfmt.Exact(cfg.GrossMADs+spikeMargin))
	return d
}

// flag is the decision on a night the single- or two-night rule flags:
// the regression it opens, and the nights it began between.
func (j *judging) flag(d Decision, base string) Decision {
	n := len(j.hist)
	d.Flagged, d.Status, d.Rule = true, StatusFlagged, j.rule
	first := n
	if j.rule == RuleTwoNight {
		first--
	}
	if j.end-j.start >= minCarryLevel {
		d.Carry = &Carried{Index: first, Level: j.level, LevelNights: j.end - j.start, WorsePct: d.WorsePct}
	}
	if j.rule == RuleTwoNight {
		d.LastGood, d.FirstBad = n-2, n-1
		base += "; " + j.twoWhy
	} else {
		d.LastGood, d.FirstBad = n-1, n
	}
	j.widen(&d)
	d.Why = fmt.Sprintf("flagged (%s, p %s ≤ %s): %s, beyond the %s%% floor", j.rule, numfmt.P(d.PNight), numfmt.Exact(j.cfg.FalseAlarmRate), base, numfmt.Exact(j.cfg.MinEffectPct))
	return d
}

// widen moves a flagged night's last good night a night earlier on weak
// evidence, or when the night before already looked worse: the change
// may have begun a night earlier.
func (j *judging) widen(d *Decision) {
	prevWorse := j.dir * (j.level - j.hist[max(0, d.LastGood)])
	if d.PNight > j.cfg.FalseAlarmRate/10 || prevWorse > j.nz.sd {
		d.LastGood, d.Widened = max(0, d.LastGood-1), true
		if j.rule == RuleTwoNight {
			d.FirstBad = len(j.hist)
		}
	}
}

// notFlagged says why a night not flagged was not.
func (j *judging) notFlagged(d Decision, base string) Decision {
	switch {
	case d.WorsePct <= 0:
		d.Why = "not flagged: " + base
	case !j.pastFloor:
		d.Why = fmt.Sprintf("not flagged: %s, below the %s%% floor", base, numfmt.Exact(j.cfg.MinEffectPct))
	default:
		d.Why = fmt.Sprintf("not flagged (p %s > %s): %s, within the %.1f%% the noise allows", numfmt.P(d.PNight), numfmt.Exact(j.cfg.FalseAlarmRate), base, d.NoiseThresholdPct)
	}
	return d
}

// nightVar is the variance of tonight's value, the median of reps, on
// the scale of s2, the variance of a past night (the median of pastReps
// runs). Runs of one night share the server and the image, so only their
// run-to-run part shrinks with more of them: estimated from tonight's
// spread, it can be no more than a past night's whole variance allows.
// Repetitions that disagree more than nights do widen it instead.
func nightVar(s2 float64, reps, spread []float64, pastReps int) float64 {
	n := len(reps)
	if n < 2 || len(spread) < 2 {
		return s2
	}
	_, sd := meanSD(spread)
	r2 := sd * sd
	ch, cn := medianFactor(pastReps), medianFactor(n)
	v := s2
	if cn < ch {
		v -= (ch - cn) * min(r2, s2/ch)
	}
	return max(v, cn*r2)
}

// medianFactor is the variance of the median of n normal values in units
// of one value's: exact to five, π/(2n) beyond.
func medianFactor(n int) float64 {
	switch {
	case n <= 1:
		return 1
	case n == 2:
		return 0.5
	case n == 3:
		return 0.4487
	case n == 4:
		return 0.3433
	case n == 5:
		return 0.2868
	}
	return math.Pi / (2 * float64(n))
}

// twoNight is the p-value of the two-night rule: the night before (the
// last of reg, the current regime) and tonight against the regime's
// other nights. It is 1 unless both are worse and the night before was
// not beyond the single-night bound itself (it alarmed then, and must not
// alarm again through tonight). Two tests share the rule's rate
// (Bonferroni): the two nights averaged, and both nights beyond the less
// worse of them. The average is the stronger where one night is much
// worse than the other; "both beyond" where heavy tails make a single far
// night common and two far nights in a row rare, the shape of a step on
// noisy nights (`runner calibrate --series --check`: Django's 3σ steps
// caught within two nights went from 75.8 % to 77.5 %).
func twoNight(reg []float64, ton, tonVar float64, nz noise, dir, alpha1 float64) (float64, string) {
	prev, rest := reg[len(reg)-1], reg[:len(reg)-1]
	level := median(rest)
	s2 := nz.sd * nz.sd
	lv := s2 * medianVar(len(rest)) * (1 + nz.rho) / (1 - nz.rho)
	prevWorse, tonWorse := dir*(level-prev), dir*(level-ton)
	if prevWorse <= 0 || tonWorse <= 0 {
		return 1, ""
	}
	zPrev, zTon := prevWorse/math.Sqrt(s2+lv), tonWorse/math.Sqrt(tonVar+lv)
	if tSurvival(zPrev, nz.nu) <= alpha1 {
		return 1, ""
	}
	pair := (prevWorse + tonWorse) / 2
	pMean := tSurvival(pair/math.Sqrt((s2+tonVar+2*nz.rho*s2)/4+lv), nz.nu)
	// The two nights are correlated by the wander and by the one level
	// both are judged against.
	r := min(0.95, max(0, (nz.rho*s2+lv)/math.Sqrt((s2+lv)*(tonVar+lv))))
	pBoth := bothBeyond(min(zPrev, zTon), r, nz.nu)
	return min(1, 2*min(pMean, pBoth)), fmt.Sprintf("with the night before (%.1f%% worse) the two nights average %.1f%% worse", worsePct(prevWorse, dir), worsePct(pair, dir))
}

func worseWord(w float64) string {
	if w > 0 {
		return "worse"
	}
	return "better"
}

func regimeNote(d Decision, n int) string {
	switch {
	case d.Open != nil:
		return fmt.Sprintf(", before the change %d nights ago", n-d.Open.Index)
	case d.RegimeStart > 0:
		return fmt.Sprintf(", since the change %d nights ago", n-d.RegimeStart)
	}
	return ""
}

func rhoNote(rho float64) string {
	if rho > 0 {
		return fmt.Sprintf(", autocorrelation %.2f allowed for", rho)
	}
	return ""
}
