package detect

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/benchkite/benchkite/internal/numfmt"
)

// Defaults chosen with `runner calibrate` (the README has the table).
const (
	DefaultFalseAlarmRate = 0.01
	// DefaultMinHistory is the fewest past nights judged by: a young
	// recipe is judged from its fifth night, with the t-bound of the
	// nights it has.
	DefaultMinHistory = 5
	// DefaultRejectFrom is the fewest nights from which a positive
	// Config.OutlierMADs sets outlier nights aside: with fewer the MAD is
	// too rough and sets normal nights aside.
	DefaultRejectFrom = 15
	// DefaultChangeAlpha is the significance of a change point: at 0.001
	// a 30-night series of pure noise seldom shows one.
	DefaultChangeAlpha = 0.001
	// DefaultTwoNightShare is the part of the false-alarm rate the
	// two-night rule gets; the single-night rule gets the rest.
	DefaultTwoNightShare = 0.2
	// MinSegment is the fewest nights of a regime found by the change-point
	// search: one or two odd nights are not a new level.
	MinSegment = 3
	// leaveOutFrom is the fewest nights from which the night before
	// tonight is left out of the noise estimate (noiseBefore).
	leaveOutFrom = 10
	// minRhoNights is the fewest nights the autocorrelation is estimated
	// from; below, ρ's interval is too wide to be of use: six nights
	// that happen to trend read as ρ near 1, which would allow for a
	// halving.
	minRhoNights = 8
	// CalibratedNights is the history length the targets were measured at.
	CalibratedNights = 30
)

// ErrInput marks values the detector cannot judge: none for tonight,
// non-positive or non-finite values, a bad configuration.
var ErrInput = errors.New("invalid detector input")

// Status is the kind of verdict.
type Status string

// Statuses of a Decision.
const (
	StatusOK                  Status = "ok"
	StatusFlagged             Status = "flagged"
	StatusInsufficientHistory Status = "insufficient-history"
)

// Rules by which a night is flagged.
const (
	RuleSingle   = "single-night"
	RuleTwoNight = "two-night"
	// RuleOpen is a regression found earlier that is still there.
	RuleOpen = "open-regression"
)

// Config says how to judge one metric.
type Config struct {
	// HigherIsBetter is true for throughputs, false for latencies.
	HigherIsBetter bool
	// MinEffectPct is the smallest worsening, in percent of the baseline,
	// that is ever flagged (a recipe's max_drop_pct): the floor.
	MinEffectPct float64
	// FalseAlarmRate is the one-sided probability per night of flagging a
	// metric that did not change; DefaultFalseAlarmRate when zero.
	FalseAlarmRate float64
	// MinHistory is the fewest past nights to judge by; DefaultMinHistory
	// when zero.
	MinHistory int
	// OutlierMADs, when positive, sets aside from RejectFrom nights on
	// (DefaultRejectFrom when zero) the nights further than that many
	// robust standard deviations from their regime's median. Off by
	// default: with heavy-tailed nights it drops exactly the nights that
	// show how wide the tails are, and the false-alarm rate rises.
	OutlierMADs float64
	RejectFrom  int
	// ChangeAlpha is the change-point significance; DefaultChangeAlpha
	// when zero.
	ChangeAlpha float64
	// Known are indexes into the history where a new regime is known to
	// start: a recipe change, an accepted regression. The nights before
	// never set the level tonight is judged against.
	Known []int
	// Flagged are indexes into the history of the nights the gate
	// flagged on this metric. A regression the search finds in the
	// history stays red while it is open only once one of its nights was
	// flagged: confirmed then, not only seen in hindsight. Nil when not
	// known (nights from before the gate kept its verdicts): an open
	// regression then must be as large as tonight's own bound.
	Flagged []int
	// SingleNightOnly turns the two-night rule off.
	SingleNightOnly bool
	// PastReps is how many repetitions a past night's value is the
	// median of (1 when zero): tonight's repetitions beyond that many
	// narrow tonight's spread by the run-to-run part of the noise.
	PastReps int
	// GrossMADs sets aside, from the tenth night on, every
	// night further than that many robust night-to-night standard
	// deviations from its neighbours (DefaultGrossMADs when zero, never
	// when negative): from the spread, the autocorrelation, the
	// change-point search and the level. A night as far off tonight,
	// worse, is flagged only once the next night confirms it
	// (Decision.Unconfirmed).
	GrossMADs float64
	// Unconfirmed are indexes into the history of the nights judged
	// unconfirmed spikes.
	Unconfirmed []int
	// Carried is the open regression the night before handed on (its
	// Decision.Carry), nil when there is none.
	Carried *Carried
	// OneShot judges a build that has no next night, a bisect probe: a
	// gross drop is flagged at once, not left for the next night to
	// confirm.
	OneShot bool
	// prevBad: the night before tonight was flagged or an unconfirmed
	// spike, though it was set aside.
	prevBad bool
}

func (c Config) withDefaults() (Config, error) {
	if c.FalseAlarmRate == 0 {
		c.FalseAlarmRate = DefaultFalseAlarmRate
	}
	if c.MinHistory == 0 {
		c.MinHistory = DefaultMinHistory
	}
	if c.RejectFrom == 0 {
		c.RejectFrom = DefaultRejectFrom
	}
	if c.ChangeAlpha == 0 {
		c.ChangeAlpha = DefaultChangeAlpha
	}
	if c.PastReps < 1 {
		c.PastReps = 1
	}
	if c.GrossMADs == 0 {
		c.GrossMADs = DefaultGrossMADs
	}
	switch {
	case !(c.FalseAlarmRate > 0 && c.FalseAlarmRate < 0.5):
		return c, fmt.Errorf("%w: false-alarm rate %g is not in (0, 0.5)", ErrInput, c.FalseAlarmRate)
	case c.MinHistory < 3:
		return c, fmt.Errorf("%w: minimum history %d is below 3 nights", ErrInput, c.MinHistory)
	case !(c.ChangeAlpha > 0 && c.ChangeAlpha < 1):
		return c, fmt.Errorf("%w: change-point significance %g is not in (0, 1)", ErrInput, c.ChangeAlpha)
	case !(c.MinEffectPct >= 0 && c.MinEffectPct < 100):
		return c, fmt.Errorf("%w: minimum effect %g%% is not in [0, 100)", ErrInput, c.MinEffectPct)
	}
	return c, nil
}

// Open is a regression found in the history that nothing has ended: the
// level after the change is worse than before by more than the floor, and
// no known change (an acceptance) came after it.
type Open struct {
	// Index is the first night after the change, into the history.
	Index int
	// WorsePct is the change, worse positive; P its significance.
	WorsePct, P float64
	// Flags says the change is where a run of nights the gate flagged
	// begins, too short for the search to see (P is then 1).
	Flags bool
}

// Decision is the verdict on tonight. Percentages are of the baseline; a
// worsening is positive whatever the metric's direction.
type Decision struct {
	Status  Status
	Flagged bool
	// Alarm says tonight is worth a second look: PNight is within
	// AlarmFactor times the false-alarm rate and past the floor. With
	// fewer than RerunReps repetitions the bench is run again and Rerun
	// decides; Flagged implies Alarm.
	Alarm bool
	// Rule is RuleSingle, RuleTwoNight or RuleOpen when Flagged.
	Rule string
	// PNight is tonight's one-sided p-value, both rules combined
	// (weighted Bonferroni): Flagged needs PNight ≤ the false-alarm rate
	// and a worsening beyond the floor. P is the p-value a build's
	// false-alarm budget spends: PNight up to the false-alarm rate, safe
	// against heavy tails below it (see TailDoF).
	PNight, P float64
	// nu is the degrees of freedom tonight was judged with.
	nu float64
	// Baseline is the median of the regime tonight is judged against;
	// Tonight the median of tonight's repetitions.
	Baseline, Tonight float64
	// NoiseCV is the night-to-night coefficient of variation, a fraction,
	// pooled over every regime of the history.
	NoiseCV float64
	// Autocorr is the lag-1 autocorrelation of the nights around their
	// regime's level that the bounds allow for (0 when not seen).
	Autocorr float64
	// ThresholdPct is the worsening tonight needed to be flagged on its
	// own: the larger of the floor and NoiseThresholdPct.
	ThresholdPct, NoiseThresholdPct float64
	// DeltaPct is tonight against the baseline, signed; WorsePct the same
	// turned so that worse is positive.
	DeltaPct, WorsePct float64
	// Nights is how many past nights were given, Used how many the noise
	// was estimated from, Outliers how many it set aside. Reps is
	// tonight's repetitions.
	Nights, Used, Outliers, Reps int
	// RegimeStart is the first night (index into the history) of the
	// regime tonight is judged against, RegimeNights its length.
	RegimeStart, RegimeNights int
	// Changes are the history's change points, known ones included.
	Changes []Change
	// Open is the regression tonight is still judged against the nights
	// before, nil when there is none.
	Open *Open
	// LastGood and FirstBad bound where a flagged change began, as
	// indexes into the history followed by tonight (len(history) is
	// tonight); Widened says the evidence was weak and the range was
	// widened by a night on each side.
	LastGood, FirstBad int
	Widened            bool
	// Unconfirmed says tonight alone was worse by a gross margin (see
	// Config.GrossMADs) with nothing before it to confirm it: not
	// flagged, and the next night decides.
	Unconfirmed bool
	// Held says tonight is red for a carried regression its nights
	// confirmed (Carried.Held): it stays red until it is fixed or
	// accepted, a re-run cannot overturn it, and P is the evidence of
	// its nights together.
	Held bool
	// Carry is the open regression tonight hands on to the next night
	// (Config.Carried), nil when none is open.
	Carry *Carried
	// Why says, for people, why tonight was or was not flagged.
	Why string
}

// Detect judges tonight (one value per repetition) against history (one
// value per past night, oldest first). Too little history is a Decision
// with StatusInsufficientHistory, never a pass; an error means the input
// cannot be judged at all.
//
// The level is the median of the current regime: the nights after the
// history's last change point (found, or known from cfg.Known), or, while
// a regression found in the history is open, the nights before it. The
// noise is pooled over every regime around its own level, so a level shift
// does not inflate it. Tonight is the median of its repetitions, as every
// past night is.
func Detect(history, tonight []float64, cfg Config) (Decision, error) {
	d, err := detect(history, tonight, 0, cfg)
	if err != nil {
		return d, err
	}
	return d.spendable(cfg).finite(len(history))
}

// finite refuses a decision on a number that is not one: it would be no
// verdict, and summary.json cannot hold it.
func (d Decision) finite(nights int) (Decision, error) {
	for name, v := range map[string]float64{"noise": d.NoiseCV, "p-value": d.P, "threshold": d.ThresholdPct} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Decision{}, fmt.Errorf("detector: the %s came out as %v from %d nights", name, v, nights)
		}
	}
	return d, nil
}

// TailDoF is the Student t the budget's p-values allow for: a build's
// budget spends p-values far below the false-alarm rate (with 60 tests,
// 0.05/60), where a normal model of the nights is badly wrong if their
// tails are as heavy as Student's t with 3 degrees of freedom.
const TailDoF = 3

// spendable sets P from PNight: the same up to the false-alarm rate α,
// and below it α times the tail of Student's t with TailDoF degrees of
// freedom (at unit variance) beyond tonight's statistic, relative to its
// tail beyond the threshold. Whether tonight is flagged does not change;
// a p-value far in the tail needs a statistic that far out even if the
// nights' tails are that heavy. An open regression's change point does
// not lend it its own p-value: autocorrelated nights wander, and the
// search finds a wander significant far more often than it says.
func (d Decision) spendable(cfg Config) Decision {
	c, err := cfg.withDefaults()
	if err != nil {
		return d
	}
	alpha := c.FalseAlarmRate
	d.P = d.PNight
	if d.PNight < alpha && d.nu > 0 {
		z, za := tQuantile(1-d.PNight, d.nu), tQuantile(1-alpha, d.nu)
		tail := func(x float64) float64 { return tSurvival(x*math.Sqrt(TailDoF), TailDoF) }
		d.P = alpha * tail(z) / tail(za)
	}
	return d
}

// detect is Detect with tonight's spread taken from its repetitions from
// index fresh on: after a re-run on alarm the first run is the one that
// raised the alarm, and its deviation is not a fair sample of a run's.
func detect(history, tonight []float64, fresh int, cfg Config) (Decision, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Decision{}, err
	}
	if len(tonight) == 0 {
		return Decision{}, fmt.Errorf("%w: no value for tonight", ErrInput)
	}
	hist, err := logs(history, "past night")
	if err != nil {
		return Decision{}, err
	}
	reps, err := logs(tonight, "tonight's repetition")
	if err != nil {
		return Decision{}, err
	}
	if len(hist) < cfg.MinHistory {
		d := Decision{Status: StatusInsufficientHistory, Nights: len(hist), Reps: len(reps), PNight: 1, P: 1, Tonight: math.Exp(median(reps))}
		d.Why = fmt.Sprintf("first nights: no regression check yet (%d past nights, %d needed)", len(hist), cfg.MinHistory)
		return d, nil
	}
	return onPools(hist, reps, fresh, cfg)
}

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
	// regression was never confirmed by a flagged night.
	pastFloor, flagged, unconfirmed bool
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

// direction is 1 when higher is better, −1 when lower is: a worsening
// times it is positive on the log scale.
func (c Config) direction() float64 {
	if c.HigherIsBetter {
		return 1
	}
	return -1
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
// regression or an unconfirmed spike is nd's verdict, with the carried
// regression handed on; anything else is cd's.
func newOrCarried(nd, cd Decision) Decision {
	switch {
	case nd.Flagged && cd.Carry != nil:
		c := *cd.Carry
		c.Passed = 0
		nd.Carry = &c // the older reference stands
		return nd
	case nd.Flagged || nd.Unconfirmed:
		if nd.Unconfirmed {
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
// last of reg, the current regime) and tonight, averaged, against the
// regime's other nights. It is 1 unless both are worse and the night
// before was not beyond the single-night bound itself (it alarmed then,
// and must not alarm again through tonight).
func twoNight(reg []float64, ton, tonVar float64, nz noise, dir, alpha1 float64) (float64, string) {
	prev, rest := reg[len(reg)-1], reg[:len(reg)-1]
	level := median(rest)
	s2 := nz.sd * nz.sd
	lv := s2 * medianVar(len(rest)) * (1 + nz.rho) / (1 - nz.rho)
	prevWorse, tonWorse := dir*(level-prev), dir*(level-ton)
	if prevWorse <= 0 || tonWorse <= 0 {
		return 1, ""
	}
	if tSurvival(prevWorse/math.Sqrt(s2+lv), nz.nu) <= alpha1 {
		return 1, ""
	}
	pair := (prevWorse + tonWorse) / 2
	p := tSurvival(pair/math.Sqrt((s2+tonVar+2*nz.rho*s2)/4+lv), nz.nu)
	return p, fmt.Sprintf("with the night before (%.1f%% worse) the two nights average %.1f%% worse", worsePct(prevWorse, dir), worsePct(pair, dir))
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
// leaveOutFrom nights, keeps every night: one more matters more there.
func noiseBefore(hist []float64, cs []Change, cfg Config) noise {
	if len(hist) < leaveOutFrom {
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
	nz.nu = effectiveDF(nz.df, nz.used, ss, ss4, nz.rho)
	return nz
}

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

// medianVar is the variance of the median of n nights in units of one
// night's: the mean's 1/n for one or two, π/(2n) from three on.
func medianVar(n int) float64 {
	if n <= 2 {
		return 1 / float64(max(n, 1))
	}
	return math.Pi / (2 * float64(n))
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

type quantileKey struct {
	p, df float64
}

// quantiles caches Student's t quantiles: calibration asks for the same
// few millions of times.
var quantiles sync.Map

func tQuantile(p, df float64) float64 {
	k := quantileKey{p, df}
	if q, ok := quantiles.Load(k); ok {
		return q.(float64)
	}
	q := studentQuantile(p, df)
	quantiles.Store(k, q)
	return q
}

// tSurvival is P(T > t) for Student's t with df degrees of freedom.
func tSurvival(t, df float64) float64 {
	if math.IsNaN(t) {
		return 1
	}
	if math.IsInf(t, 1) {
		return 0
	}
	return studentSurvival(t, df)
}
