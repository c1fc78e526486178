package detect

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// Defaults chosen with `runner calibrate` (the README has the table): with them and
// 30 nights of history the measured false-positive rate is 0.8 % per night
// and a step of three times the noise is flagged on the night it starts or
// the next in 92 % of trials. Below 20 nights the false-positive rate
// passed 1 % (15 nights: 1.05 %) and the power fell short (20 nights: 88 %),
// hence the minimum history.
const (
	DefaultFalseAlarmRate = 0.01
	DefaultMinHistory     = 20
	DefaultOutlierMADs    = 4.0
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
)

// Config says how to judge one metric.
type Config struct {
	// HigherIsBetter is true for throughputs, false for latencies.
	HigherIsBetter bool
	// MinEffectPct is the smallest worsening, in percent of the baseline,
	// that is ever flagged (a recipe's max_drop_pct). 0 means no floor
	// beyond the noise.
	MinEffectPct float64
	// FalseAlarmRate is the one-sided probability per night of flagging a
	// metric that did not change; DefaultFalseAlarmRate when zero.
	FalseAlarmRate float64
	// MinHistory is the fewest usable past nights (after outliers are set
	// aside) to judge by; DefaultMinHistory when zero. The two-night rule
	// judges the night before by the nights before it, so it needs one
	// more.
	MinHistory int
	// OutlierMADs is how many robust standard deviations from the median a
	// past night may lie before it is set aside; DefaultOutlierMADs when
	// zero.
	OutlierMADs float64
	// SingleNightOnly turns the two-night rule off.
	SingleNightOnly bool
}

func (c Config) withDefaults() (Config, error) {
	if c.FalseAlarmRate == 0 {
		c.FalseAlarmRate = DefaultFalseAlarmRate
	}
	if c.MinHistory == 0 {
		c.MinHistory = DefaultMinHistory
	}
	if c.OutlierMADs == 0 {
		c.OutlierMADs = DefaultOutlierMADs
	}
	switch {
	case !(c.FalseAlarmRate > 0 && c.FalseAlarmRate < 0.5):
		return c, fmt.Errorf("%w: false-alarm rate %g is not in (0, 0.5)", ErrInput, c.FalseAlarmRate)
	case c.MinHistory < 3:
		return c, fmt.Errorf("%w: minimum history %d is below 3 nights", ErrInput, c.MinHistory)
	case !(c.OutlierMADs > 0):
		return c, fmt.Errorf("%w: outlier bound %g MADs is not positive", ErrInput, c.OutlierMADs)
	case !(c.MinEffectPct >= 0 && c.MinEffectPct < 100):
		return c, fmt.Errorf("%w: minimum effect %g%% is not in [0, 100)", ErrInput, c.MinEffectPct)
	}
	return c, nil
}

// Decision is the verdict on tonight. Percentages are of the baseline; a
// worsening is positive whatever the metric's direction.
type Decision struct {
	Status  Status
	Flagged bool
	// Rule is RuleSingle or RuleTwoNight when Flagged.
	Rule string
	// Baseline is the robust center of the history (geometric mean of the
	// nights kept), in the metric's unit; 0 with insufficient history.
	Baseline float64
	// Tonight is the geometric mean of tonight's repetitions.
	Tonight float64
	// NoiseCV is the night-to-night coefficient of variation, a fraction.
	NoiseCV float64
	// ThresholdPct is the worsening tonight needed to be flagged on its
	// own: the larger of the floor and NoiseThresholdPct.
	ThresholdPct float64
	// NoiseThresholdPct is the worsening the noise allows at the
	// configured false-alarm rate (single-night rule).
	NoiseThresholdPct float64
	// DeltaPct is tonight against the baseline, signed: 100·(tonight −
	// baseline)/baseline.
	DeltaPct float64
	// WorsePct is DeltaPct turned so that worse is positive.
	WorsePct float64
	// Nights is how many past nights were given; Used how many were kept;
	// Outliers how many were set aside. Reps is tonight's repetitions.
	Nights, Used, Outliers, Reps int
	// Why says, for people, why tonight was or was not flagged.
	Why string
}

// Detect judges tonight (one value per repetition) against history (one
// value per past night, oldest first). Too little history is a Decision
// with StatusInsufficientHistory, never a pass; an error means the input
// cannot be judged at all.
func Detect(history, tonight []float64, cfg Config) (Decision, error) {
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
	d := Decision{Status: StatusOK, Nights: len(hist), Reps: len(reps)}
	tonMean, tonSD := meanSD(reps)
	d.Tonight = math.Exp(tonMean)

	base := estimate(hist, cfg.OutlierMADs)
	d.Used, d.Outliers = base.n, len(hist)-base.n
	if base.n < cfg.MinHistory {
		d.Status = StatusInsufficientHistory
		d.Why = fmt.Sprintf("insufficient history: %d usable past nights (%d given, %d set aside as outliers), %d needed; not judged",
			base.n, len(hist), d.Outliers, cfg.MinHistory)
		return d, nil
	}
	d.Baseline = math.Exp(base.center)
	d.NoiseCV = cvOf(base.sd)
	d.DeltaPct = (math.Exp(tonMean-base.center) - 1) * 100
	dir := 1.0
	if !cfg.HigherIsBetter {
		dir = -1
	}
	worse := dir * (base.center - tonMean) // log units, positive is worse
	d.WorsePct = worsePct(worse, dir)

	alpha := cfg.FalseAlarmRate
	if !cfg.SingleNightOnly {
		alpha /= 2
	}
	tonVar := tonightVar(base.sd, tonSD, len(reps))
	t1 := tQuantile(1-alpha, base.n-1) * math.Sqrt(tonVar+base.sd*base.sd/float64(base.n))
	d.NoiseThresholdPct = worsePct(t1, dir)
	d.ThresholdPct = max(d.NoiseThresholdPct, cfg.MinEffectPct)
	pastFloor := d.WorsePct >= cfg.MinEffectPct

	if worse >= t1 && pastFloor {
		d.Flagged, d.Status, d.Rule = true, StatusFlagged, RuleSingle
		d.Why = fmt.Sprintf("flagged: tonight %.4g is %.1f%% worse than the baseline %.4g (mean of %d nights, noise CV %.1f%%), beyond both the %g%% floor and the %.1f%% the noise allows at a %g%% false-alarm rate",
			d.Tonight, d.WorsePct, d.Baseline, base.n, d.NoiseCV*100, cfg.MinEffectPct, d.NoiseThresholdPct, alpha*100)
		return d, nil
	}
	if !cfg.SingleNightOnly && pastFloor {
		if ok, why := twoNight(hist, tonMean, tonSD, len(reps), dir, alpha, cfg); ok {
			d.Flagged, d.Status, d.Rule = true, StatusFlagged, RuleTwoNight
			d.Why = fmt.Sprintf("flagged: tonight %.4g is %.1f%% worse than the baseline %.4g (noise CV %.1f%%); alone within the %.1f%% the noise allows, but %s",
				d.Tonight, d.WorsePct, d.Baseline, d.NoiseCV*100, d.NoiseThresholdPct, why)
			return d, nil
		}
	}
	switch {
	case d.WorsePct <= 0:
		d.Why = fmt.Sprintf("not flagged: tonight %.4g is %.1f%% better than the baseline %.4g (mean of %d nights, noise CV %.1f%%)",
			d.Tonight, -d.WorsePct, d.Baseline, base.n, d.NoiseCV*100)
	case worse >= t1:
		d.Why = fmt.Sprintf("not flagged: tonight %.4g is %.1f%% worse than the baseline %.4g (noise CV %.1f%%), beyond the %.1f%% the noise allows but below the %g%% floor",
			d.Tonight, d.WorsePct, d.Baseline, d.NoiseCV*100, d.NoiseThresholdPct, cfg.MinEffectPct)
	default:
		d.Why = fmt.Sprintf("not flagged: tonight %.4g is %.1f%% worse than the baseline %.4g (mean of %d nights, noise CV %.1f%%), within the %.1f%% the noise allows at a %g%% false-alarm rate",
			d.Tonight, d.WorsePct, d.Baseline, base.n, d.NoiseCV*100, d.NoiseThresholdPct, alpha*100)
	}
	return d, nil
}

// twoNight applies the two-night rule: the night before (the last of
// hist) and tonight are judged against the nights before them.
func twoNight(hist []float64, tonMean, tonSD float64, reps int, dir, alpha float64, cfg Config) (bool, string) {
	if len(hist) < 2 {
		return false, ""
	}
	prev := hist[len(hist)-1]
	base := estimate(hist[:len(hist)-1], cfg.OutlierMADs)
	if base.n < cfg.MinHistory || base.sd == 0 {
		return false, ""
	}
	s2 := base.sd * base.sd
	n := float64(base.n)
	q := tQuantile(1-alpha, base.n-1)
	prevWorse := dir * (base.center - prev)
	tonWorse := dir * (base.center - tonMean)
	tonVar := tonightVar(base.sd, tonSD, reps)
	// The night before must not have been beyond the single-night
	// threshold itself: then it alarmed already (or was an outlier), and
	// must not alarm again through tonight.
	if prevWorse >= q*math.Sqrt(s2*(1+1/n)) {
		return false, ""
	}
	if prevWorse < base.sd || tonWorse < math.Sqrt(tonVar) {
		return false, ""
	}
	pair := (prevWorse + tonWorse) / 2
	t2 := q * math.Sqrt((s2+tonVar)/4+s2/n)
	if pair < t2 {
		return false, ""
	}
	return true, fmt.Sprintf("with the night before (%.1f%% worse) the two nights average %.1f%% worse, beyond the %.1f%% two nights allow",
		worsePct(prevWorse, dir), worsePct(pair, dir), worsePct(t2, dir))
}

// tonightVar is the variance of tonight's log mean: the night-to-night
// variance, or the standard error of the repetitions when larger.
func tonightVar(nightSD, repSD float64, reps int) float64 {
	v := nightSD * nightSD
	if reps >= 2 {
		v = max(v, repSD*repSD/float64(reps))
	}
	return v
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

// center is the estimate of a history's level and noise on the log scale.
type center struct {
	center, sd float64
	n          int // nights kept
}

// estimate sets aside nights beyond k robust standard deviations of the
// median and returns the mean and standard deviation of the rest.
func estimate(x []float64, k float64) center {
	if len(x) == 0 {
		return center{}
	}
	med := median(x)
	dev := make([]float64, len(x))
	for i, v := range x {
		dev[i] = math.Abs(v - med)
	}
	scale := 1.4826 * median(dev)
	if scale == 0 {
		// More than half the nights are equal: fall back to the mean
		// absolute deviation, scaled to a standard deviation.
		var sum float64
		for _, v := range dev {
			sum += v
		}
		scale = 1.2533 * sum / float64(len(dev))
	}
	kept := make([]float64, 0, len(x))
	for i, v := range x {
		if dev[i] <= k*scale {
			kept = append(kept, v)
		}
	}
	m, sd := meanSD(kept)
	return center{center: m, sd: sd, n: len(kept)}
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
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
	p  float64
	df int
}

// quantiles caches Student's t quantiles: calibration asks for the same
// few millions of times.
var quantiles sync.Map

func tQuantile(p float64, df int) float64 {
	k := quantileKey{p, df}
	if q, ok := quantiles.Load(k); ok {
		return q.(float64)
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
	quantiles.Store(k, q)
	return q
}
