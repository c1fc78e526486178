package gate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// A regression gate asks the detector (package detect) whether tonight is
// worse than the current regime of the recipe's past nights by more than
// both the recipe's max_drop_pct and what the metric's own noise allows.
// A recipe change (a new fingerprint) and an accepted regression
// (regression.accept) are known change points in one series, not new
// series: tonight with a changed recipe is judged against the nights of
// the old one, so a pull request that makes a model slower says so. A
// recipe with fewer than detect.DefaultMinHistory nights passes on its
// absolute gates and says "first nights: no regression check yet".

// regressions judges each planned run's gated metrics against the
// recipe's past nights.
func (g Gater) regressions(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	var out []summary.GateResult
	for _, planned := range g.Res.BenchRuns {
		c := g.configOf(planned.Config)
		if c == nil {
			continue
		}
		policy := g.Res.Recipe.Bench.RegressionFor(c)
		if policy == nil {
			continue
		}
		run := benchRun(sum, planned.Name)
		var history baseline.Nights
		var histErr error
		if run != nil && run.Status == summary.StatusOK {
			history, histErr = g.History.Last(ctx, sum.Recipe, policy.Nights)
		}
		for _, m := range policy.Metrics {
			out = append(out, g.regression(sum, planned.Name, run, policy, m, history, histErr))
		}
	}
	return out
}

func direction(m workloads.RegressionMetric) string {
	if m.HigherIsBetter {
		return "higher is better"
	}
	return "lower is better"
}

func (g Gater) regression(sum *summary.Summary, name string, run *summary.BenchRun, policy *workloads.Regression, m workloads.RegressionMetric, history baseline.Nights, histErr error) summary.GateResult {
	gr, _ := g.judge(sum, name, run, policy, m, history, histErr)
	return gr
}

// judge is regression that also says whether tonight raised the alarm
// that re-runs the bench (detect.Decision.Alarm).
func (g Gater) judge(sum *summary.Summary, name string, run *summary.BenchRun, policy *workloads.Regression, m workloads.RegressionMetric, history baseline.Nights, histErr error) (gr summary.GateResult, alarm bool) {
	gr, d := g.decide(sum, name, run, policy, m, history, histErr)
	return gr, d != nil && d.Alarm
}

// decide is the regression gate's verdict on metric m of the run called
// name, and the detector's decision, nil where it judged nothing.
func (g Gater) decide(sum *summary.Summary, name string, run *summary.BenchRun, policy *workloads.Regression, m workloads.RegressionMetric, history baseline.Nights, histErr error) (summary.GateResult, *detect.Decision) {
	gr := summary.GateResult{Kind: summary.GateRegression, Subject: name, Metric: m.Metric,
		Bound: fmt.Sprintf("no worse than the %s%% floor and the noise of the current regime of the last %d nights allow (%s)", numfmt.Exact(m.MaxDropPct), policy.Nights, direction(m))}
	v, why := benchValue(run, m.Metric)
	if why != "" {
		return unmeasured(gr, sum, summary.PhaseBench, why), nil
	}
	gr.Value = &v
	if histErr != nil && !errors.Is(histErr, baseline.ErrNoNights) {
		gr.Verdict = summary.VerdictNoBaseline
		gr.Message = fmt.Sprintf("%s %s = %s: no baseline (%v)", name, m.Metric, numfmt.Sig(v, 4), histErr)
		return gr, nil
	}
	past, shapeNote := pastValues(history, name, m.Metric, shapeKey(run), sum.Fingerprint)
	tonight := []float64{v}
	if reps := run.RepetitionValues[m.Metric]; len(reps) > 1 {
		tonight = reps
	}
	ref := tonightRef(sum, v)
	s := seriesOf(past, sum, policy.Accept, m, ref.Build, time.Now().UTC())
	if short, ok := tooFewNights(gr, name, policy, m, v, len(past), len(tonight), shapeNote); ok {
		return short, nil
	}
	carried, carriedSince := carriedOf(s)
	cfg := detect.Config{HigherIsBetter: m.HigherIsBetter, MinEffectPct: m.MaxDropPct, Known: s.known, PastReps: pastReps(past), Flagged: s.flagged,
		Unconfirmed: s.unconfirmed, Carried: carried, OneShot: noNextNight(sum, s)}
	d, err := JudgeTonight(s.values, tonight, run.Reruns, cfg)
	if err != nil {
		gr.Verdict = summary.VerdictError
		gr.Message = fmt.Sprintf("%s %s = %s: cannot be judged: %v", name, m.Metric, numfmt.Sig(v, 4), err)
		return gr, nil
	}
	var sinceBuild int
	gr.Detector, sinceBuild = readingOf(d, tonight, s, policy.Accept, m, ref, carriedSince)
	if shapeNote != "" {
		s.notes = append(s.notes, shapeNote)
	}
	gr.Message = message(name, m.Metric, v, d, s.notes, len(past), gr.Detector.ReducedPower)
	if d.Status == detect.StatusInsufficientHistory {
		gr.Verdict = summary.VerdictPass
		return gr, &d
	}
	withBound(&gr, &d, m)
	if d.Flagged {
		withChangePoint(&gr, s, d, m, ref, sum.Recipe, sinceBuild)
	}
	return gr, &d
}

// tooFewNights is the verdict on a metric, tonight v, that has too few
// past nights, of the policy's, to be judged on, and whether it has: a young recipe
// passes on its absolute gates (not a soft failure); one with more
// nights missing than the policy allows has no baseline.
func tooFewNights(gr summary.GateResult, name string, policy *workloads.Regression, m workloads.RegressionMetric, v float64, nights, reps int, shapeNote string) (summary.GateResult, bool) {
	need := policy.Nights - policy.MaxMissing
	switch {
	case nights < detect.DefaultMinHistory:
		gr.Verdict = summary.VerdictPass
		gr.Detector = &summary.Detector{Nights: nights, Repetitions: reps, Tonight: v, FloorPct: m.MaxDropPct, P: 1,
			Why: "first nights: no regression check yet"}
		gr.Message = fmt.Sprintf("%s %s = %s: first nights: no regression check yet (%d past nights, %d needed)", name, m.Metric, numfmt.Sig(v, 4), nights, detect.DefaultMinHistory) + withNote(shapeNote)
		return gr, true
	case nights < need:
		gr.Verdict = summary.VerdictNoBaseline
		gr.Message = fmt.Sprintf("%s %s = %s: only %d of %d past nights have it, %d needed (at most %d may be missing)", name, m.Metric, numfmt.Sig(v, 4), nights, policy.Nights, need, policy.MaxMissing) + withNote(shapeNote)
		return gr, true
	}
	return gr, false
}

// readingOf is what the summary keeps of d, the detector's decision on
// tonight's repetitions of a metric of series s, and the build the
// regression it holds open began with: carriedSince, that of the one
// carried to tonight, unless d hands on another.
func readingOf(d detect.Decision, tonight []float64, s series, accept *workloads.Accept, m workloads.RegressionMetric, ref summary.NightRef, carriedSince int) (*summary.Detector, int) {
	r := reading(d, tonight, m.MaxDropPct)
	if s.accepting {
		r.Accepted = acceptedNote(accept, m.Metric)
	}
	if d.Open != nil {
		r.OpenSince = s.past[d.Open.Index].ref.Build
	}
	sinceBuild := carriedSince
	if c := d.Carry; c != nil {
		switch {
		case c.Index >= len(s.past):
			sinceBuild = ref.Build
		case c.Index >= 0:
			sinceBuild = s.past[c.Index].ref.Build
		}
		r.OpenSince, r.OpenLevel, r.OpenWorsePct, r.OpenPassed = sinceBuild, math.Exp(c.Level), c.WorsePct, c.Passed
		r.OpenHeld, r.OpenP, r.OpenLevelNights = c.Held, c.P, c.LevelNights
	}
	r.Unconfirmed = d.Unconfirmed
	return r, sinceBuild
}

// acceptedNote is the recipe's regression.accept record of metric, ""
// when it accepts none of it.
func acceptedNote(accept *workloads.Accept, metric string) string {
	level, ok := accept.Level(metric)
	if !ok {
		return ""
	}
	return fmt.Sprintf("since %s: up to %s%% worse: %s", accept.Since, numfmt.Sig(level, 4), accept.Reason)
}

// message says, for people, tonight's value v of a run's metric and why
// the detector decided as it did, with the series' notes, and that the
// nights were fewer than the detector is calibrated for.
func message(name, metric string, v float64, d detect.Decision, notes []string, nights int, reducedPower bool) string {
	msg := fmt.Sprintf("%s %s = %s: %s", name, metric, numfmt.Sig(v, 4), d.Why)
	for _, n := range notes {
		msg += "; " + n
	}
	if reducedPower && d.Status != detect.StatusInsufficientHistory {
		msg += fmt.Sprintf("; judged on %d nights, fewer than the %d the detector is calibrated for: a real drop is caught less often", nights, detect.CalibratedNights)
	}
	return msg
}

// withBound sets a judged gate's baseline, change, bound and verdict.
func withBound(gr *summary.GateResult, d *detect.Decision, m workloads.RegressionMetric) {
	gr.Baseline, gr.DeltaPct = &d.Baseline, pct(d.DeltaPct)
	gr.Bound = fmt.Sprintf("at most %.1f%% worse than %s, the median of %d nights (floor %s%%, noise %.1f%%; %s)",
		d.ThresholdPct, numfmt.Sig(d.Baseline, 4), d.RegimeNights, numfmt.Exact(m.MaxDropPct), d.NoiseThresholdPct, direction(m))
	gr.Verdict = verdictOf(!d.Flagged)
}

// withChangePoint names where a flagged regression of series s began:
// the nights it began between and how to bisect them, or, when it began
// before the nights the history holds, its first build, sinceBuild.
func withChangePoint(gr *summary.GateResult, s series, d detect.Decision, m workloads.RegressionMetric, ref summary.NightRef, recipe string, sinceBuild int) {
	cp := culprit(s.past, d, ref, recipe)
	if cp.Found {
		cp.GoodRegime = goodRegime(s, d, m)
	}
	if d.Carry != nil && d.Carry.Index < 0 {
		// It began before the nights the history holds: only its
		// first build is known, carried from night to night.
		cp = summary.ChangePoint{FirstBad: summary.NightRef{Build: sinceBuild}}
	}
	if d.Carry != nil && d.Rule == detect.RuleOpen && sinceBuild > 0 {
		gr.Message += fmt.Sprintf("; open since #%d, %.1f%% worse when caught, judged against %s, the level before it", sinceBuild, d.Carry.WorsePct, numfmt.Sig(math.Exp(d.Carry.Level), 4))
	}
	gr.ChangePoint = &cp
	gr.Message += "; " + describeChange(cp)
}

// reading is what the summary keeps of a decision.
func reading(d detect.Decision, tonight []float64, floor float64) *summary.Detector {
	return &summary.Detector{
		Nights: d.Nights, Used: d.Used, Outliers: d.Outliers,
		Repetitions: len(tonight), RepMin: slices.Min(tonight), RepMax: slices.Max(tonight), Tonight: d.Tonight,
		NoiseCVPct: d.NoiseCV * 100, FloorPct: floor, NoiseThresholdPct: d.NoiseThresholdPct, ThresholdPct: d.ThresholdPct,
		WorsePct: d.WorsePct, Rule: d.Rule,
		ReducedPower: d.Status != detect.StatusInsufficientHistory && d.Nights < detect.CalibratedNights/2,
		Why:          d.Why, P: d.P, RegimeNights: d.RegimeNights, Autocorr: d.Autocorr, Held: d.Held,
	}
}

// withNote is "; note", or "" for no note.
func withNote(note string) string {
	if note == "" {
		return ""
	}
	return "; " + note
}

// Alarm names the gated metrics of br (a run measured tonight, before
// any re-run) on which the detector raises the alarm (p within
// detect.AlarmFactor times the false-alarm rate): the job then re-runs
// the bench on alarm and the gate decides on every run. Gates that
// cannot judge raise no alarm.
func (g Gater) Alarm(ctx context.Context, sum *summary.Summary, br summary.BenchRun) []string {
	c := g.configOf(br.Config)
	if c == nil || g.Res.Recipe.Bench == nil {
		return nil
	}
	policy := g.Res.Recipe.Bench.RegressionFor(c)
	if policy == nil || g.History == nil {
		return nil
	}
	br.Status = summary.StatusOK
	history, err := g.History.Last(ctx, sum.Recipe, policy.Nights)
	var out []string
	for _, m := range policy.Metrics {
		if _, alarm := g.judge(sum, br.Name, &br, policy, m, history, err); alarm {
			out = append(out, m.Metric)
		}
	}
	return out
}

// JudgeTonight runs the detector on tonight's repetitions; when the last
// reruns of them were a re-run on alarm, the first look (without them)
// raised the alarm and the second confirms it on every repetition. The
// nightly gate, a bisect build and `runner calibrate --series` are judged
// by this one rule, so what calibrate measures is what the gate does.
func JudgeTonight(history, tonight []float64, reruns int, cfg detect.Config) (detect.Decision, error) {
	if reruns > 0 && len(tonight) > reruns {
		first, err := detect.Detect(history, tonight[:len(tonight)-reruns], cfg)
		if err != nil {
			return first, err
		}
		return detect.Rerun(first, history, tonight, cfg)
	}
	return detect.Detect(history, tonight, cfg)
}

// noNextNight says no later night revisits tonight's verdict, so a gross
// drop is judged at once rather than left for the next night to
// confirm: a pull request's build, or a night whose recipe changed
// (the change, not a slow machine, is then what the drop points at).
func noNextNight(sum *summary.Summary, s series) bool {
	if b := sum.Buildkite; b != nil && b.PullRequest != "" && b.PullRequest != "false" {
		return true
	}
	n := len(s.past)
	return n > 0 && sum.Fingerprint != nil && s.past[n-1].fp != nil && s.past[n-1].fp.Hash != sum.Fingerprint.Hash
}
