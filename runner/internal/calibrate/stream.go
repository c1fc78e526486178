package calibrate

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/gate"
)

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
