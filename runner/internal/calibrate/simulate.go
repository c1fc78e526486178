package calibrate

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/benchkite/benchkite/runner/internal/detect"
)

// Sim describes one simulated setting.
type Sim struct {
	Nights  int     // past nights the detector sees
	NoiseCV float64 // night-to-night coefficient of variation, a fraction
	StepPct float64 // worsening from night k on, percent
	Trials  int
	Seed    uint64
	// Reps is the repetitions per night (1 when zero) and RepCV their
	// spread within a night; a past night's value is their median, as in
	// summary.json.
	Reps  int
	RepCV float64
	// Detector is the configuration under test; HigherIsBetter is set to
	// true (a throughput falls by StepPct).
	Detector detect.Config
}

// Result is what one setting measured.
type Result struct {
	Nights  int     `json:"nights"`
	NoiseCV float64 `json:"noise_cv"`
	StepPct float64 `json:"step_pct"`
	Trials  int     `json:"trials"`
	Seed    uint64  `json:"seed"`
	Reps    int     `json:"reps"`
	RepCV   float64 `json:"rep_cv"`

	// FalsePositiveRate is FalsePositives / NoChangeNights.
	FalsePositiveRate float64 `json:"false_positive_rate"`
	FalsePositives    int     `json:"false_positives"`
	NoChangeNights    int     `json:"no_change_nights"`
	// Power is Detected / Trials: the share of step trials flagged on
	// night k or k+1; DetectedAtK of them already on night k.
	Power       float64 `json:"power"`
	Detected    int     `json:"detected"`
	DetectedAtK int     `json:"detected_at_k"`
	// Insufficient counts verdicts of insufficient history (after
	// outliers were set aside), which never flag.
	Insufficient int `json:"insufficient_history"`
}

// Run simulates s. It fails only when the detector rejects its
// configuration.
func Run(s Sim) (Result, error) {
	if s.Reps < 1 {
		s.Reps = 1
	}
	s.Detector.HigherIsBetter = true
	r := Result{Nights: s.Nights, NoiseCV: s.NoiseCV, StepPct: s.StepPct, Trials: s.Trials, Seed: s.Seed, Reps: s.Reps, RepCV: s.RepCV}
	// The no-change stream depends on the noise alone, so every step of a
	// table shares one false-positive measurement per noise level.
	null := newNights(s, rand.New(rand.NewPCG(s.Seed, math.Float64bits(s.NoiseCV))))
	step := newNights(s, rand.New(rand.NewPCG(s.Seed^math.Float64bits(s.StepPct), math.Float64bits(s.NoiseCV)+1)))
	factor := 1 - s.StepPct/100
	for range s.Trials {
		flags, insufficient, err := null.trial(1)
		if err != nil {
			return r, err
		}
		r.NoChangeNights += 2
		r.FalsePositives += flags[0] + flags[1]
		r.Insufficient += insufficient

		flags, insufficient, err = step.trial(factor)
		if err != nil {
			return r, err
		}
		r.Insufficient += insufficient
		if flags[0]+flags[1] > 0 {
			r.Detected++
		}
		r.DetectedAtK += flags[0]
	}
	if r.NoChangeNights > 0 {
		r.FalsePositiveRate = float64(r.FalsePositives) / float64(r.NoChangeNights)
	}
	if r.Trials > 0 {
		r.Power = float64(r.Detected) / float64(r.Trials)
	}
	return r, nil
}

// nights draws nightly values; buffers are reused across trials.
type nights struct {
	s            Sim
	rng          *rand.Rand
	sigma, repSD float64
	hist, reps   []float64
}

func newNights(s Sim, rng *rand.Rand) *nights {
	return &nights{
		s: s, rng: rng,
		sigma: math.Sqrt(math.Log1p(s.NoiseCV * s.NoiseCV)),
		repSD: math.Sqrt(math.Log1p(s.RepCV * s.RepCV)),
	}
}

// night draws one night's repetitions at level into n.reps.
func (n *nights) night(level float64) []float64 {
	v := level * math.Exp(n.sigma*n.rng.NormFloat64())
	n.reps = n.reps[:0]
	for range n.s.Reps {
		r := v
		if n.repSD > 0 {
			r *= math.Exp(n.repSD * n.rng.NormFloat64())
		}
		n.reps = append(n.reps, r)
	}
	return n.reps
}

func (n *nights) summary(reps []float64) float64 {
	if len(reps) == 1 {
		return reps[0]
	}
	s := slices.Clone(reps)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// trial draws a history and judges nights k and k+1, whose level is
// factor times the history's; flags[i] is 1 when night k+i was flagged.
func (n *nights) trial(factor float64) (flags [2]int, insufficient int, err error) {
	const level = 1000.0
	n.hist = n.hist[:0]
	for range n.s.Nights {
		n.hist = append(n.hist, n.summary(n.night(level)))
	}
	for i := range 2 {
		reps := n.night(level * factor)
		d, err := detect.Detect(n.hist, reps, n.s.Detector)
		if err != nil {
			return flags, insufficient, err
		}
		if d.Flagged {
			flags[i] = 1 // a failed night stays out of the history
			continue
		}
		if d.Status == detect.StatusInsufficientHistory {
			insufficient++ // a warning: the night passes
		}
		n.hist = append(n.hist[1:], n.summary(reps))
	}
	return flags, insufficient, nil
}
