package calibrate

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/gate"
)

// Noise models: how one bench run's value strays from the level, on the
// log scale, with standard deviation NoiseCV (as a log-normal CV).
const (
	ModelLognormal  = "lognormal"
	ModelStudentT   = "student-t"
	ModelOutliers   = "outliers"
	ModelAR1        = "ar1"
	ModelTwoPools   = "two-pools"
	ModelDrift      = "drift"
	ModelLevelShift = "level-shift"
	// What real histories have that the models above lack: gross
	// outliers that belong to the night (a re-run repeats them), on 4 %
	// of nights, two in three of them fast; two pools of machines 25 %
	// apart, a night on the fast one one time in five; an era change
	// (a new fleet 15 % faster and three times quieter) 20 nights before
	// the judged nights; frequent improvements of twice the noise, 3 %
	// of nights.
	ModelNightOutliers = "night-outliers"
	ModelPools         = "pools"
	ModelEras          = "eras"
	ModelShifts        = "shifts"
	// ModelHistory resamples a recipe's real nights (--from-history).
	ModelHistory = "history"
)

// Models are the noise models --noise-model takes.
var Models = []string{ModelLognormal, ModelStudentT, ModelOutliers, ModelAR1, ModelTwoPools, ModelDrift, ModelLevelShift,
	ModelNightOutliers, ModelPools, ModelEras, ModelShifts}

// Sim describes one simulated setting of the nightly loop.
type Sim struct {
	Model   string
	NoiseCV float64 // spread of one run, a fraction
	StepPct float64 // worsening from night k on, percent
	Nights  int     // past nights the gate asks for
	Trials  int
	Seed    uint64
	// Reps is the bench repetitions a night (1 when zero); a night's value
	// is their median, as in summary.json.
	Reps int
	// NightShare is the part of the variance all runs of a night share
	// (the server, the image, the pool); a re-run draws only the rest
	// anew. The ar1, two-pools, drift and history models are all night.
	NightShare float64
	// Rerun runs a flagged night's bench twice more when it has fewer than
	// three repetitions, and judges again on all of them.
	Rerun bool
	// Missing is the chance a night has no run.
	Missing float64
	// Judged is the nights judged per trial once the history is full.
	Judged int
	// Model parameters.
	TDoF                      float64
	OutlierRate, OutlierScale float64
	Phi                       float64
	// Recipes × Metrics independent tests make a build; BuildFDR is the
	// false-alarm budget Benjamini–Hochberg spends over them.
	Recipes, Metrics int
	BuildFDR         float64
	// Residuals are the log-scale nights --from-history resamples.
	Residuals []float64
	Detector  detect.Config
}

// Result is what one setting measured.
type Result struct {
	Model      string  `json:"noise_model"`
	Nights     int     `json:"nights"`
	NoiseCV    float64 `json:"noise_cv"`
	StepPct    float64 `json:"step_pct"`
	Trials     int     `json:"trials"`
	Seed       uint64  `json:"seed"`
	Reps       int     `json:"reps"`
	NightShare float64 `json:"night_share"`
	Rerun      bool    `json:"rerun"`
	Missing    float64 `json:"missing"`
	FloorPct   float64 `json:"floor_pct"`

	// FalsePositiveRate is FalsePositives / NoChangeNights: nights judged
	// with a full history and no change.
	FalsePositiveRate float64 `json:"false_positive_rate"`
	FalsePositives    int     `json:"false_positives"`
	NoChangeNights    int     `json:"no_change_nights"`
	// YoungFalsePositiveRate is the same on nights judged with 5 to 14
	// past nights.
	YoungFalsePositiveRate float64 `json:"false_positive_rate_young"`
	YoungNights            int     `json:"young_nights"`
	// Power is the share of step trials flagged on night k or k+1,
	// PowerFirstNight on night k.
	Power           float64 `json:"power"`
	PowerFirstNight float64 `json:"power_first_night"`
	Detected        int     `json:"detected"`
	// CulpritCoverage is the share of detections whose range (last good,
	// first bad] holds night k.
	CulpritCoverage float64 `json:"culprit_coverage"`
	// StaysRed is the share of the step's later nights (k+2 to
	// k+StepNights-1, the regression neither fixed nor accepted) that are
	// flagged: a regression that flaps green, or that the history absorbs
	// into its level, shows here.
	StaysRed float64 `json:"stays_red"`
	// AcceptedFalsePositiveRate is the share of nights flagged after the
	// recipe accepts the regression (regression.accept from night k, a
	// known change), at the worse level: the accepted level is the new
	// normal and should pass at the nominal rate.
	AcceptedFalsePositiveRate float64 `json:"false_positive_rate_accepted"`
	AcceptedNights            int     `json:"accepted_nights"`
	// RerunsPerNight is the extra bench runs re-run on alarm cost, per
	// judged night.
	RerunsPerNight float64 `json:"reruns_per_night"`
	// BuildFalseAlarmRate is the share of builds of Recipes × Metrics
	// unchanged tests in which the budget let any fail.
	BuildFalseAlarmRate float64 `json:"build_false_alarm_rate"`
	Builds              int     `json:"builds"`
	Recipes             int     `json:"recipes"`
	Metrics             int     `json:"metrics"`
}

// StepNights is how many nights a step trial runs at the worse level:
// two for the power, the rest to see the regression stay red, past the
// night its good nights leave the history.
const StepNights = 45

// Run simulates s. It fails only when the detector rejects its
// configuration.
func Run(s Sim) (Result, error) {
	s = s.withDefaults()
	r := Result{Model: s.Model, Nights: s.Nights, NoiseCV: s.NoiseCV, StepPct: s.StepPct, Trials: s.Trials, Seed: s.Seed,
		Reps: s.Reps, NightShare: s.NightShare, Rerun: s.Rerun, Missing: s.Missing, FloorPct: s.Detector.MinEffectPct,
		Recipes: s.Recipes, Metrics: s.Metrics}
	seed := s.Seed ^ math.Float64bits(s.NoiseCV) ^ uint64(len(s.Model))<<40
	null := rand.New(rand.NewPCG(seed, 1))
	step := rand.New(rand.NewPCG(seed^math.Float64bits(s.StepPct), 2))
	var c counts
	for range s.Trials {
		if err := nullRun(s, null, &r, &c); err != nil {
			return r, err
		}
		if err := stepRun(s, step, &r, &c); err != nil {
			return r, err
		}
	}
	c.rates(s, &r)
	if s.Recipes > 0 && s.Metrics > 0 {
		if err := builds(s, rand.New(rand.NewPCG(seed, 3)), &r); err != nil {
			return r, err
		}
	}
	return r, nil
}

// withDefaults is s with one repetition a night and ten judged nights
// when unset, and the detector set up as the loop uses it.
func (s Sim) withDefaults() Sim {
	if s.Reps < 1 {
		s.Reps = 1
	}
	if s.Judged < 1 {
		s.Judged = 10
	}
	s.Detector.HigherIsBetter = true
	s.Detector.PastReps = s.Reps
	return s
}

// counts are what the trials count that a Result keeps only as a rate.
type counts struct {
	// reruns are the extra bench runs of the null trials' judged nights.
	reruns, judged int
	// covered are the detections whose range holds the step's night;
	// later the step's later nights judged, red those of them flagged;
	// acceptedRed the nights flagged after the step was accepted.
	covered, later, red, acceptedRed int
}

// rates sets r's rates from what the trials counted.
func (c counts) rates(s Sim, r *Result) {
	if c.later > 0 {
		r.StaysRed = float64(c.red) / float64(c.later)
	}
	if r.AcceptedNights > 0 {
		r.AcceptedFalsePositiveRate = float64(c.acceptedRed) / float64(r.AcceptedNights)
	}
	if r.NoChangeNights > 0 {
		r.FalsePositiveRate = float64(r.FalsePositives) / float64(r.NoChangeNights)
	}
	if r.YoungNights > 0 {
		r.YoungFalsePositiveRate /= float64(r.YoungNights)
	}
	if r.Detected > 0 {
		r.CulpritCoverage = float64(c.covered) / float64(r.Detected)
	}
	if s.Trials > 0 {
		r.Power = float64(r.Detected) / float64(s.Trials)
		r.PowerFirstNight /= float64(s.Trials)
	}
	if c.judged > 0 {
		r.RerunsPerNight = float64(c.reruns) / float64(c.judged)
	}
}

// nullRun runs a stream that never changes: its judged nights count
// towards the false-positive rate, and every night it judges, the
// warm-up's too, towards the young nights'.
func nullRun(s Sim, rng *rand.Rand, r *Result, c *counts) error {
	st := newStream(s, rng)
	if err := st.warmUp(r); err != nil {
		return err
	}
	for range s.Judged {
		d, err := st.night(1, r)
		if err != nil {
			return err
		}
		if d == nil {
			continue
		}
		r.NoChangeNights++
		if d.Flagged {
			r.FalsePositives++
		}
	}
	c.reruns += st.reruns
	c.judged += st.judged
	return nil
}

// stepRun runs a stream that worsens by StepPct from its first judged
// night on for StepNights nights, then accepts the regression and runs
// Judged nights more at the worse level.
func stepRun(s Sim, rng *rand.Rand, r *Result, c *counts) error {
	st := newStream(s, rng)
	if err := st.warmUp(nil); err != nil {
		return err
	}
	factor := 1 - s.StepPct/100
	k := st.t
	if err := st.stepped(factor, k, r, c); err != nil {
		return err
	}
	st.accept(k)
	for range s.Judged {
		d, err := st.night(factor, nil)
		if err != nil {
			return err
		}
		if d != nil {
			r.AcceptedNights++
			if d.Flagged {
				c.acceptedRed++
			}
		}
	}
	return nil
}

// stepped runs the StepNights nights of a step that began on night
// k at factor times the level: whether its first two nights detect it,
// and whether the range of the detection holds k, then how many of the
// later nights stay red.
func (st *stream) stepped(factor float64, k int, r *Result, c *counts) error {
	detected := false
	for i := range StepNights {
		d, err := st.night(factor, nil)
		if err != nil {
			return err
		}
		if i >= 2 {
			if d != nil {
				c.later++
				if d.Flagged {
					c.red++
				}
			}
			continue
		}
		if detected || d == nil || !d.Flagged {
			continue
		}
		detected = true
		if i == 0 {
			r.PowerFirstNight++
		}
		r.Detected++
		if st.lastGood < k && k <= st.firstBad {
			c.covered++
		}
	}
	return nil
}

// accept has the recipe accept the regression that began on night k:
// the nights since k were flagged for the regression now accepted, and
// their flags are settled, as the gate drops the flags of nights judged
// before the acceptance.
func (st *stream) accept(k int) {
	st.acceptFrom = k
	for i := range st.hist {
		if st.hist[i].t >= k {
			// As the gate settles them: flags and the regression
			// carried on from before the acceptance.
			st.hist[i].flagged, st.hist[i].carry = false, nil
		}
	}
}

// builds runs Trials/10 (at least 20) sequences of Judged builds of
// Recipes × Metrics unchanged tests and counts the builds the budget
// fails: gate.Spend at BuildFDR over the night's tests, as the report
// step spends it, where a test fails only if its own gate flagged it.
func builds(s Sim, rng *rand.Rand, r *Result) error {
	n := s.Recipes * s.Metrics
	seqs := max(20, s.Trials/10)
	fails := 0
	for range seqs {
		streams := make([]*stream, n)
		for i := range streams {
			streams[i] = newStream(s, rng)
			for streams[i].warm() {
				if _, err := streams[i].night(1, nil); err != nil {
					return err
				}
			}
		}
		for range s.Judged {
			tests := make([]gate.BudgetTest, 0, n)
			for _, st := range streams {
				d, err := st.night(1, nil)
				if err != nil {
					return err
				}
				if d != nil {
					tests = append(tests, gate.BudgetTest{P: d.P, Flagged: d.Flagged})
				}
			}
			r.Builds++
			if gate.Spend(tests, s.BuildFDR).Failed() {
				fails++
			}
		}
	}
	if r.Builds > 0 {
		r.BuildFalseAlarmRate = float64(fails) / float64(r.Builds)
	}
	return nil
}

// pastNight is one night of the history the loop keeps.
type pastNight struct {
	t                    int
	value                float64
	flagged, unconfirmed bool
	// carry is the open regression the night handed on, its Index a
	// night number.
	carry *detect.Carried
}

// stream is one recipe-metric night after night: the pipeline's own
// loop, in which the history is the last Nights nights, flagged or not.
type stream struct {
	s                 Sim
	rng               *rand.Rand
	sdNight, sdRun    float64
	t, warmNights     int
	shiftAt           int
	ar, drift         float64
	hist              []pastNight
	vals              []float64
	flags             []int
	lastGood          int
	firstBad          int
	reruns, judged    int
	nightEffect, base float64
	// acceptFrom, when positive, is the night from which the recipe
	// accepts a regression: a known change in the history.
	acceptFrom int
}

func newStream(s Sim, rng *rand.Rand) *stream {
	sd := math.Sqrt(math.Log1p(s.NoiseCV * s.NoiseCV))
	share := s.NightShare
	switch s.Model {
	case ModelAR1, ModelTwoPools, ModelDrift, ModelHistory:
		share = 1
	}
	warm := int(math.Ceil(float64(s.Nights)/(1-s.Missing))) + 10
	return &stream{s: s, rng: rng, sdNight: sd * math.Sqrt(share), sdRun: sd * math.Sqrt(1-share),
		warmNights: warm, shiftAt: warm - 15}
}

// warm says whether the stream is still building its history.
func (st *stream) warm() bool { return st.t < st.warmNights }

// draw is one zero-mean deviate of the model with standard deviation sd.
func (st *stream) draw(sd float64) float64 {
	if sd == 0 {
		return 0
	}
	rng := st.rng
	switch st.s.Model {
	case ModelStudentT:
		nu := st.s.TDoF
		var chi float64
		for range int(nu) {
			z := rng.NormFloat64()
			chi += z * z
		}
		t := rng.NormFloat64() / math.Sqrt(chi/nu)
		return sd * t / math.Sqrt(nu/(nu-2))
	case ModelOutliers:
		// Scaled so the mixture's standard deviation is sd.
		p, k := st.s.OutlierRate, st.s.OutlierScale
		base := sd / math.Sqrt(1-p+p*k*k)
		if rng.Float64() < p {
			return k * base * rng.NormFloat64()
		}
		return base * rng.NormFloat64()
	}
	return sd * rng.NormFloat64()
}

// nightDraw is the part of a night's value every run shares.
func (st *stream) nightDraw() float64 {
	sd := st.sdNight
	switch st.s.Model {
	case ModelAR1:
		phi := st.s.Phi
		st.ar = phi*st.ar + math.Sqrt(1-phi*phi)*sd*st.rng.NormFloat64()
		return st.ar
	case ModelTwoPools:
		pool := 0.8 * sd
		if st.rng.IntN(2) == 0 {
			pool = -pool
		}
		return pool + 0.6*sd*st.rng.NormFloat64()
	case ModelDrift:
		st.drift += 0.15 * sd * st.rng.NormFloat64()
		return st.drift + sd*st.rng.NormFloat64()
	case ModelHistory:
		return st.s.Residuals[st.rng.IntN(len(st.s.Residuals))]
	}
	return st.draw(sd)
}

// warmUp runs the nights that build the stream's history, counting the
// young nights it judges into r (none when nil).
func (st *stream) warmUp(r *Result) error {
	for st.warm() {
		if _, err := st.night(1, r); err != nil {
			return err
		}
	}
	return nil
}

// night runs one night at factor times the level: d is the verdict, nil
// when the night was missed or the history is too short to judge. young
// counts a judged night with 5 to 14 past nights into r.
func (st *stream) night(factor float64, r *Result) (*detect.Decision, error) {
	t := st.t
	st.t++
	sd := math.Hypot(st.sdNight, st.sdRun)
	st.shift(t, sd)
	ne, scale := st.shared(t, sd)
	if st.rng.Float64() < st.s.Missing {
		return nil, nil
	}
	level := 1000 * math.Exp(st.base) * factor
	reps := make([]float64, 0, 3)
	for range st.s.Reps {
		reps = append(reps, st.run(level, ne, scale))
	}
	cfg, carriedFrom := st.config()
	if len(st.vals) < max(st.s.Detector.MinHistory, detect.DefaultMinHistory) {
		st.keep(t, reps, pastNight{})
		return nil, nil
	}
	d, reps, err := st.judge(reps, cfg, level, ne, scale)
	if err != nil {
		return nil, err
	}
	st.judged++
	if r != nil && len(st.hist) < 15 {
		r.YoungNights++
		if d.Flagged {
			r.YoungFalsePositiveRate++
		}
	}
	if d.Flagged {
		st.lastGood, st.firstBad = st.nightOf(d.LastGood, t), st.nightOf(d.FirstBad, t)
	}
	st.keep(t, reps, st.judgedNight(d, t, carriedFrom))
	return &d, nil
}

// shift moves the level as the model's changes do on night t: a level
// shift, the frequent improvements, the new fleet; sd is a run's whole
// spread.
func (st *stream) shift(t int, sd float64) {
	switch {
	case st.s.Model == ModelLevelShift && t == st.shiftAt:
		st.base += 3 * sd // an improvement of three times the noise
	case st.s.Model == ModelShifts && st.rng.Float64() < 0.03:
		st.base += 2 * sd
	case st.s.Model == ModelEras && t == st.warmNights-20:
		st.base += math.Log(1.15) // the new fleet
	}
}

// shared is the part of night t's value every run of it shares, gross
// outliers and pools included, and the factor its noise is scaled by;
// sd is a run's whole spread.
func (st *stream) shared(t int, sd float64) (ne, scale float64) {
	scale = 1.0
	if st.s.Model == ModelEras && t < st.warmNights-20 {
		scale = 3 // the old fleet's noise
	}
	ne = st.nightDraw() * scale
	switch st.s.Model {
	case ModelNightOutliers:
		if st.rng.Float64() < 0.04 {
			gross := (6 + 9*st.rng.Float64()) * sd
			if st.rng.IntN(3) > 0 {
				ne += gross // fast
			} else {
				ne -= gross
			}
		}
	case ModelPools:
		if st.rng.IntN(5) == 0 {
			ne += math.Log(1.25)
		}
	}
	return ne, scale
}

// run is one bench run's value on a night at level whose shared part is
// ne and whose noise is scaled by scale.
func (st *stream) run(level, ne, scale float64) float64 {
	return level * math.Exp(ne+scale*st.draw(st.sdRun))
}

// config reads the history into st.vals and st.flags and is the
// detector's configuration for tonight: the nights flagged and
// unconfirmed, the regression the night before carried on, and an
// accepted regression's known change. carriedFrom is the night the
// carried regression began.
func (st *stream) config() (cfg detect.Config, carriedFrom int) {
	st.vals = st.vals[:0]
	st.flags = st.flags[:0]
	var unconfirmed []int
	for i, h := range st.hist {
		st.vals = append(st.vals, h.value)
		if h.flagged {
			st.flags = append(st.flags, i)
		}
		if h.unconfirmed {
			unconfirmed = append(unconfirmed, i)
		}
	}
	cfg = st.s.Detector
	cfg.Flagged = append([]int{}, st.flags...)
	cfg.Unconfirmed = unconfirmed
	if n := len(st.hist); n > 0 && st.hist[n-1].carry != nil {
		c := *st.hist[n-1].carry
		carriedFrom, c.Index = c.Index, st.indexOf(c.Index)
		cfg.Carried = &c
	}
	if st.acceptFrom > 0 {
		if i := slices.IndexFunc(st.hist, func(h pastNight) bool { return h.t >= st.acceptFrom }); i > 0 {
			cfg.Known = []int{i}
		}
	}
	return cfg, carriedFrom
}

// judge is the gate's own rule on tonight's runs, reps: a first look,
// and on alarm a second on every run once the bench has run again (at
// level, ne and scale, as night drew them). It returns the decision and
// every run.
func (st *stream) judge(reps []float64, cfg detect.Config, level, ne, scale float64) (detect.Decision, []float64, error) {
	d, err := gate.JudgeTonight(st.vals, reps, 0, cfg)
	if err != nil {
		return d, reps, err
	}
	if d.Alarm && st.s.Rerun && len(reps) < detect.RerunReps {
		more := detect.RerunReps - len(reps)
		for range more {
			reps = append(reps, st.run(level, ne, scale))
			st.reruns++
		}
		d, err = gate.JudgeTonight(st.vals, reps, more, cfg)
	}
	return d, reps, err
}

// judgedNight is night t as the history keeps it once judged d: its
// flags and the regression it carries on, its Index a night number
// (carriedFrom, the night the regression carried to it began, when that
// is older than the history).
func (st *stream) judgedNight(d detect.Decision, t, carriedFrom int) pastNight {
	night := pastNight{flagged: d.Flagged, unconfirmed: d.Unconfirmed}
	if d.Carry != nil {
		c := *d.Carry
		c.Index = st.nightOf(c.Index, t)
		if d.Carry.Index < 0 {
			c.Index = carriedFrom // older than the history: as carried
		}
		night.carry = &c
	}
	return night
}

// indexOf turns a night number into an index into the history: that of
// the first night kept on or after it, negative when it is older than
// the history.
func (st *stream) indexOf(night int) int {
	if len(st.hist) == 0 || night < st.hist[0].t {
		return -1
	}
	i, _ := slices.BinarySearchFunc(st.hist, night, func(h pastNight, t int) int { return h.t - t })
	return i
}

// nightOf turns an index into the history followed by tonight into a
// night number.
func (st *stream) nightOf(i, tonight int) int {
	if i >= len(st.hist) {
		return tonight
	}
	return st.hist[max(i, 0)].t
}

func (st *stream) keep(t int, reps []float64, night pastNight) {
	s := slices.Clone(reps)
	slices.Sort(s)
	v := s[len(s)/2]
	if len(s)%2 == 0 {
		v = math.Sqrt(s[len(s)/2-1] * s[len(s)/2])
	}
	night.t, night.value = t, v
	st.hist = append(st.hist, night)
	if len(st.hist) > st.s.Nights {
		st.hist = st.hist[1:]
	}
}
