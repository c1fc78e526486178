package calibrate

import (
	"math"
	"math/rand/v2"

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
