// Package gputime accounts what a run held its GPUs for: GPUs × wall time
// per phase, from the phase timestamps of its summary. Loading the model
// every night is usually the biggest share; this makes it visible.
package gputime

import (
	"time"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Phases are the accounted phases, in run order. Load is serve and ready.
var Phases = []string{"tools", "load", "bench", "lm_eval", "bfcl", "teardown"}

// accounted maps a summary phase to its accounted phase.
var accounted = map[string]string{
	summary.PhaseTools:  "tools",
	summary.PhaseServe:  "load",
	summary.PhaseReady:  "load",
	summary.PhaseBench:  "bench",
	summary.PhaseLMEval: "lm_eval",
	summary.PhaseBFCL:   "bfcl",
}

// Of is s's GPU time with the profile's price per GPU-hour (0: none);
// nil when the run has no start or no GPUs.
func Of(s *summary.Summary, hourPrice float64) *summary.GPUTime {
	if s.NumGPUs <= 0 || s.Started.IsZero() || s.Finished.Before(s.Started) {
		return nil
	}
	gpus := float64(s.NumGPUs)
	g := &summary.GPUTime{GPUs: s.NumGPUs, Phases: map[string]float64{}, HourPrice: hourPrice}
	var lastEnd time.Time
	for _, p := range s.Phases {
		name, ok := accounted[p.Name]
		if !ok || p.Started.IsZero() || p.Finished.Before(p.Started) {
			continue
		}
		g.Phases[name] += p.Finished.Sub(p.Started).Seconds() * gpus
		if p.Finished.After(lastEnd) {
			lastEnd = p.Finished
		}
	}
	// Teardown is not a phase of its own: it runs between the last
	// phase and the gates (or the end, when the gates did not run).
	end := s.Finished
	if p := s.Phase(summary.PhaseGate); p != nil && !p.Started.IsZero() {
		end = p.Started
	}
	if !lastEnd.IsZero() && end.After(lastEnd) {
		g.Phases["teardown"] = end.Sub(lastEnd).Seconds() * gpus
	}
	g.Total = s.Finished.Sub(s.Started).Seconds() * gpus
	if s.Verdict == summary.VerdictError {
		g.Lost = g.Total
	}
	return g
}

// Totals is a build's GPU time: the sum of its runs'.
type Totals struct {
	Runs   int
	Phases map[string]float64
	Total  float64
	Lost   float64
	Saved  float64
	// Retried is what earlier, retried tries of the steps held (part of
	// Total); RetriedTries counts them by class ("" for a cancel).
	Retried      float64
	RetriedTries map[string]int
	// Cost is the priced part of Total; Priced counts the runs with a
	// price, so a partial cost is not mistaken for the whole.
	Cost   float64
	Priced int
}

// Sum adds up the runs' GPU time; runs without any are left out.
func Sum(sums []summary.Summary) Totals {
	t := Totals{Phases: map[string]float64{}, RetriedTries: map[string]int{}}
	for _, s := range sums {
		g := s.GPUTime
		if g == nil {
			continue
		}
		for k, v := range g.RetriedTries {
			t.RetriedTries[k] += v
		}
		t.Retried += g.Retried
		if g.Total <= 0 && g.Retried <= 0 {
			continue // a step that left no summary: its tries only
		}
		t.Runs++
		for k, v := range g.Phases {
			t.Phases[k] += v
		}
		t.Total += g.Total + g.Retried
		t.Lost += g.Lost
		t.Saved += g.Saved
		if g.HourPrice > 0 {
			t.Cost += (g.Total + g.Retried) / 3600 * g.HourPrice
			t.Priced++
		}
	}
	return t
}

// Tries is the number of retried tries.
func (t Totals) Tries() int {
	n := 0
	for _, v := range t.RetriedTries {
		n += v
	}
	return n
}

// Dominant is the phase that took the most GPU time, "" when none took any.
func (t Totals) Dominant() string {
	best, most := "", 0.0
	for _, p := range Phases {
		if v := t.Phases[p]; v > most {
			best, most = p, v
		}
	}
	return best
}
