package detect

import (
	"errors"
	"fmt"
	"math"
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

// direction is 1 when higher is better, −1 when lower is: a worsening
// times it is positive on the log scale.
func (c Config) direction() float64 {
	if c.HigherIsBetter {
		return 1
	}
	return -1
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
