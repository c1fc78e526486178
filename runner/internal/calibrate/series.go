package calibrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/gate"
)

// Series is one real history of one metric, night by night, as --series
// reads it: the values oldest first, the nights where the benchmark itself
// changed (known change points, as a recipe change is), and optionally
// more runs of each night that a re-run on alarm would add.
type Series struct {
	Name           string      `json:"name"`
	HigherIsBetter bool        `json:"higher_is_better"`
	Values         []float64   `json:"values"`
	Known          []int       `json:"known"`
	Reruns         [][]float64 `json:"reruns,omitempty"`
}

// ReadSeries reads a --series file: a JSON array of Series. Every error
// names the file, and the line or the series and night at fault.
func ReadSeries(path string) ([]Series, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Series
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		off := dec.InputOffset()
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.As(err, &te):
			off = te.Offset
		}
		return nil, fmt.Errorf("%s:%d: %w", path, 1+bytes.Count(b[:min(int(off), len(b))], []byte("\n")), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: more than one JSON value: give one array of series", path)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no series", path)
	}
	for i, s := range out {
		at := fmt.Sprintf("%s: series %d (%q)", path, i+1, s.Name)
		if s.Name == "" {
			return nil, fmt.Errorf("%s: has no name", at)
		}
		if len(s.Values) == 0 {
			return nil, fmt.Errorf("%s: has no values", at)
		}
		for j, v := range s.Values {
			if !(v > 0) || math.IsInf(v, 1) {
				return nil, fmt.Errorf("%s: value %d is %v; values must be positive and finite", at, j, v)
			}
		}
		for _, k := range s.Known {
			if k < 0 || k >= len(s.Values) {
				return nil, fmt.Errorf("%s: known change at night %d is outside its %d nights", at, k, len(s.Values))
			}
		}
		if s.Reruns != nil && len(s.Reruns) != len(s.Values) {
			return nil, fmt.Errorf("%s: %d reruns for %d values; give one list a night", at, len(s.Reruns), len(s.Values))
		}
		for j, r := range s.Reruns {
			for _, v := range r {
				if !(v > 0) || math.IsInf(v, 1) {
					return nil, fmt.Errorf("%s: a rerun of night %d is %v; values must be positive and finite", at, j, v)
				}
			}
		}
	}
	return out, nil
}

// NightResult is one night of a replay, as --json prints it.
type NightResult struct {
	Series       string  `json:"series"`
	Night        int     `json:"night"`
	Value        float64 `json:"value"`
	Judged       bool    `json:"judged"`
	Flagged      bool    `json:"flagged"`
	Rule         string  `json:"rule,omitempty"`
	Baseline     float64 `json:"baseline,omitempty"`
	ThresholdPct float64 `json:"threshold_pct,omitempty"`
	WorsePct     float64 `json:"worse_pct,omitempty"`
	NoiseCVPct   float64 `json:"noise_cv_pct,omitempty"`
	// Open says a regression is open after tonight; OpenSince is the
	// night it began and OpenLevel the level it is judged against.
	Open      bool    `json:"open"`
	OpenSince *int    `json:"open_since,omitempty"`
	OpenLevel float64 `json:"open_level,omitempty"`
	// Unconfirmed: tonight alone was beyond the bound by a gross margin
	// and waits for the next night to confirm it.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
	// Reruns are the runs a re-run on alarm added tonight.
	Reruns int `json:"reruns,omitempty"`
	// Why is the detector's reason, as the gate's message gives it.
	Why string `json:"why,omitempty"`
}

// replayNight is one past night the replay keeps, as the history keeps a
// night's summary.
type replayNight struct {
	night                int
	value                float64
	reps                 int
	flagged, unconfirmed bool
	carried              *detect.Carried
}

// Replay judges s night by night, as the nightly gate would have: each
// night against the last nights (at most window) before it, with their
// own past verdicts and the open regression the night before carried,
// through gate.JudgeTonight, re-running a night that raises the alarm
// with s.Reruns when there are any. floor is the recipe's max_drop_pct.
func Replay(s Series, window int, floor float64) ([]NightResult, error) {
	known := map[int]bool{}
	for _, k := range s.Known {
		known[k] = true
	}
	var hist []replayNight
	out := make([]NightResult, 0, len(s.Values))
	for t, v := range s.Values {
		r := NightResult{Series: s.Name, Night: t, Value: v}
		vals := make([]float64, len(hist))
		cfg := detect.Config{HigherIsBetter: s.HigherIsBetter, MinEffectPct: floor}
		cfg.Flagged, cfg.Unconfirmed = []int{}, []int{}
		reps := make([]int, len(hist))
		for i, h := range hist {
			vals[i], reps[i] = h.value, h.reps
			if h.flagged {
				cfg.Flagged = append(cfg.Flagged, i)
			}
			if h.unconfirmed {
				cfg.Unconfirmed = append(cfg.Unconfirmed, i)
			}
			if i > 0 && known[h.night] {
				cfg.Known = append(cfg.Known, i)
			}
		}
		if len(hist) > 0 && hist[len(hist)-1].carried != nil {
			c := *hist[len(hist)-1].carried
			c.Index -= hist[0].night // the night it began, into the history
			cfg.Carried = &c
		}
		if len(reps) > 0 {
			slices.Sort(reps)
			cfg.PastReps = reps[len(reps)/2]
		}
		tonight := []float64{v}
		night := replayNight{night: t, value: v, reps: 1}
		if len(hist) >= detect.DefaultMinHistory {
			d, err := gate.JudgeTonight(vals, tonight, 0, cfg)
			if err != nil {
				return nil, fmt.Errorf("%s night %d: %w", s.Name, t, err)
			}
			if d.Alarm && len(tonight) < detect.RerunReps && t < len(s.Reruns) && len(s.Reruns[t]) > 0 {
				more := s.Reruns[t][:min(len(s.Reruns[t]), detect.RerunReps-len(tonight))]
				tonight = append(tonight, more...)
				r.Reruns = len(more)
				if d, err = gate.JudgeTonight(vals, tonight, len(more), cfg); err != nil {
					return nil, fmt.Errorf("%s night %d: %w", s.Name, t, err)
				}
			}
			night.value, night.reps = medianValue(tonight), len(tonight)
			night.flagged, night.unconfirmed = d.Flagged, d.Unconfirmed
			if d.Carry != nil {
				c := *d.Carry
				c.Index += nightOfIndex(hist, t)
				night.carried = &c
			}
			if d.Status != detect.StatusInsufficientHistory {
				r.Judged, r.Flagged, r.Rule, r.Unconfirmed = true, d.Flagged, d.Rule, d.Unconfirmed
				r.Baseline, r.ThresholdPct, r.WorsePct, r.NoiseCVPct = d.Baseline, d.ThresholdPct, d.WorsePct, d.NoiseCV*100
				r.Why = d.Why
			}
			if c := night.carried; c != nil {
				since := c.Index
				r.Open, r.OpenSince, r.OpenLevel = true, &since, math.Exp(c.Level)
			}
		}
		out = append(out, r)
		hist = append(hist, night)
		if len(hist) > window {
			hist = hist[1:]
		}
	}
	return out, nil
}

// nightOfIndex is the night number of the first night of hist (tonight,
// t, when hist is empty).
func nightOfIndex(hist []replayNight, t int) int {
	if len(hist) == 0 {
		return t
	}
	return hist[0].night
}

// medianValue is a night's value from its runs, as summary.json keeps it:
// their median, the geometric mean of the middle two for an even count.
func medianValue(reps []float64) float64 {
	s := slices.Clone(reps)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return math.Sqrt(s[n/2-1] * s[n/2])
}
