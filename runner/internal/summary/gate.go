package summary

// Gate kinds.
const (
	GateAccuracy   = "accuracy"
	GateBench      = "bench"
	GateRegression = "regression"
	// GateSpecDecode: a speculating recipe's run reported acceptance.
	GateSpecDecode = "spec_decode"
)

// GateResult is the decision of one gate on one metric.
type GateResult struct {
	Kind     string   `json:"kind"`
	Subject  string   `json:"subject"`
	Metric   string   `json:"metric"`
	Value    *float64 `json:"value"` // nil (null) when not measured
	Bound    string   `json:"bound"`
	Baseline *float64 `json:"baseline,omitempty"`
	DeltaPct *float64 `json:"delta_pct,omitempty"`
	Verdict  string   `json:"verdict"`
	Message  string   `json:"message,omitempty"`
	// BaselineFrom is the recipe a baseline_from gate compares with, and
	// Tolerance the drop it allows: the report step judges it again when
	// that recipe ran in the same build.
	BaselineFrom string   `json:"baseline_from,omitempty"`
	Tolerance    *float64 `json:"tolerance,omitempty"`
	// Detector is what the regression detector saw (regression gates).
	Detector *Detector `json:"detector,omitempty"`
	// ChangePoint names where a flagged regression began.
	ChangePoint *ChangePoint `json:"change_point,omitempty"`
	// Alpha is a baseline_from gate's significance level for the paired
	// test; the report step uses it too.
	Alpha *float64 `json:"alpha,omitempty"`
	// Paired is the per-question test of a baseline_from gate, absent when
	// it was not run (the message then says why).
	Paired *Paired `json:"paired,omitempty"`
}

// Paired is a per-question comparison with another recipe's night:
// McNemar's exact test on the questions only one run got right.
type Paired struct {
	// Against names the night, "recipe #build".
	Against string `json:"against"`
	Pairs   int    `json:"pairs"`
	// Agreement is the share of pairs scored alike.
	Agreement float64 `json:"agreement"`
	// B is right only without speculation, C only with it.
	B     int     `json:"b"`
	C     int     `json:"c"`
	P     float64 `json:"p"`
	Alpha float64 `json:"alpha"`
	Delta float64 `json:"delta"`
	Fail  bool    `json:"fail"`
	// Unverified: too few questions paired to decide.
	Unverified bool   `json:"unverified,omitempty"`
	Why        string `json:"why"`
	// Note is set when the night ran another image than tonight.
	Note string `json:"note,omitempty"`
}

// Detector is the regression detector's reading of one metric: the
// spread it judged by, its threshold and why it did or did not flag.
// Percentages are of the baseline; worse is positive whatever the
// metric's direction.
type Detector struct {
	// Nights are the comparable past nights with the metric; Used of them
	// were kept and Outliers set aside.
	Nights   int `json:"nights"`
	Used     int `json:"used"`
	Outliers int `json:"outliers"`
	// Repetitions, RepMin and RepMax are tonight's values: their count
	// and range.
	Repetitions int     `json:"repetitions"`
	RepMin      float64 `json:"repetition_min"`
	RepMax      float64 `json:"repetition_max"`
	// Tonight is the geometric mean of the repetitions.
	Tonight float64 `json:"tonight"`
	// NoiseCVPct is the night-to-night coefficient of variation.
	NoiseCVPct float64 `json:"noise_cv_pct"`
	// FloorPct is the recipe's max_drop_pct; NoiseThresholdPct what the
	// noise allows; ThresholdPct the larger, what tonight alone needed.
	FloorPct          float64 `json:"floor_pct"`
	NoiseThresholdPct float64 `json:"noise_threshold_pct"`
	ThresholdPct      float64 `json:"threshold_pct"`
	WorsePct          float64 `json:"worse_pct"`
	// Rule is "single-night" or "two-night" when flagged.
	Rule string `json:"rule,omitempty"`
	// ReducedPower: judged on fewer nights than the detector was
	// calibrated with; a step is caught less often.
	ReducedPower bool   `json:"reduced_power,omitempty"`
	Why          string `json:"why"`
	// P is the p-value a build's false-alarm budget spends (1 below the
	// floor): tonight's up to the false-alarm rate, safe against heavy
	// tails below it (detect.Decision.P); Why gives tonight's own.
	// RegimeNights are the nights the level came from; Autocorr the
	// autocorrelation allowed for.
	P            float64 `json:"p,omitempty"`
	RegimeNights int     `json:"regime_nights,omitempty"`
	Autocorr     float64 `json:"autocorr,omitempty"`
	// OpenSince is the build a regression still open began with.
	OpenSince int `json:"open_since,omitempty"`
	// OpenLevel is the level an open regression is judged against (the
	// baseline the night it was caught), OpenWorsePct how much worse it
	// was then, OpenPassed the nights in a row it has passed since it was
	// last flagged: the next night carries them on, so the regression
	// stays red however long ago its good nights were.
	OpenLevel float64 `json:"open_level,omitempty"`
	// OpenLevelNights is how many nights OpenLevel is the median of.
	OpenLevelNights int     `json:"open_level_nights,omitempty"`
	OpenWorsePct    float64 `json:"open_worse_pct,omitempty"`
	OpenPassed      int     `json:"open_passed,omitempty"`
	// OpenHeld: the open regression was confirmed (its nights together
	// far off the level before), so it stays red until fixed or
	// accepted; OpenP is the smallest p-value its nights together have
	// had, the evidence a build's false-alarm budget weighs it by.
	OpenHeld bool    `json:"open_held,omitempty"`
	OpenP    float64 `json:"open_p,omitempty"`
	// Unconfirmed: tonight was worse by a gross margin with no night
	// before it as bad, as one night of a slow machine is; not failed,
	// the next night confirms it or not.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
	// Held: tonight is red for a confirmed open regression (OpenHeld),
	// not for a new alarm of its own.
	Held bool `json:"held,omitempty"`
	// Accepted is the recipe's regression.accept record, when it applies.
	Accepted string `json:"accepted,omitempty"`
}

// ChangePoint is where a flagged regression began: the last good and the
// first bad night of the series (past nights and tonight), and the
// `generator trigger` commands that would bisect between their vLLM
// commits.
type ChangePoint struct {
	LastGood NightRef `json:"last_good"`
	FirstBad NightRef `json:"first_bad"`
	// P is the t-test's p-value of the split; 0 with Found false.
	P float64 `json:"p"`
	// Found is false when no split was significant: then the last past
	// night and tonight are named.
	Found bool `json:"found"`
	// Before and After are the series' means on either side.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Bisect are command lines, present only when both commits are known.
	Bisect []string `json:"bisect,omitempty"`
	// Widened says the evidence was weak and the range holds a night more
	// on each side.
	Widened bool `json:"widened,omitempty"`
	// GoodRegime is what the detector judged against, cut at the last
	// good night: a bisect build is judged by it as tonight was.
	GoodRegime *Regime `json:"good_regime,omitempty"`
}

// Regime is a metric's nights up to the last good one, oldest first, with
// the known change points among them and the detector's settings.
type Regime struct {
	Nights         []float64 `json:"nights"`
	Known          []int     `json:"known,omitempty"`
	HigherIsBetter bool      `json:"higher_is_better"`
	FloorPct       float64   `json:"floor_pct"`
}

// NightRef names one night of a series.
type NightRef struct {
	Build       int     `json:"build,omitempty"` // 0 when unknown
	Tonight     bool    `json:"tonight,omitempty"`
	Value       float64 `json:"value"`
	ImageDigest string  `json:"image_digest,omitempty"`
	VLLMCommit  string  `json:"vllm_commit,omitempty"`
}
