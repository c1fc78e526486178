package gate

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/benchkite/benchkite/internal/shell"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// A regression gate asks the detector (package detect) whether tonight is
// worse than the comparable past nights by more than both the recipe's
// max_drop_pct and what the metric's own noise allows. The recipe's
// nights − max_missing (by default 5 of 30) is the fewest nights it judges
// by. Below the detector's calibrated minimum (detect.DefaultMinHistory)
// it still judges, with the t-bound of the nights it has, and says that
// its power is reduced: a young recipe is judged from its fifth night
// rather than unverified for weeks.

// MinUsedNights is the fewest nights left after outliers are set aside
// that the detector judges by: with fewer it cannot estimate the noise.
const MinUsedNights = 3

// ChangePointAlpha is the significance level of the change-point search
// that names where a flagged regression began.
const ChangePointAlpha = 0.01

// pastValue is one past night's value of a metric.
type pastValue struct {
	value float64
	ref   summary.NightRef
}

// regressions judges each planned run's gated metrics against the
// recipe's comparable past nights.
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
		var series string
		if run != nil && run.Status == summary.StatusOK {
			history, histErr = g.History.Last(ctx, sum.Recipe, policy.Nights)
			history, series = Comparable(history, sum.Fingerprint)
		}
		for _, m := range policy.Metrics {
			gr := g.regression(sum, planned.Name, run, policy, m, history, histErr)
			if series != "" && gr.Verdict != summary.VerdictError && gr.Verdict != summary.VerdictSkipped {
				gr.Message += "; " + series
			}
			out = append(out, gr)
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
	need := policy.Nights - policy.MaxMissing
	gr := summary.GateResult{Kind: summary.GateRegression, Subject: name, Metric: m.Metric,
		Bound: fmt.Sprintf("no worse than the %g%% floor and the noise of the last %d comparable nights allow (%s)", m.MaxDropPct, policy.Nights, direction(m))}
	v, why := benchValue(run, m.Metric)
	if why != "" {
		return unmeasured(gr, sum, summary.PhaseBench, why)
	}
	gr.Value = &v
	if histErr != nil {
		gr.Verdict = summary.VerdictNoBaseline
		gr.Message = fmt.Sprintf("%s %s = %.4g: no baseline (%v)", name, m.Metric, v, histErr)
		return gr
	}
	past := pastValues(history, name, m.Metric)
	if len(past) < need {
		gr.Verdict = summary.VerdictNoBaseline
		gr.Message = fmt.Sprintf("%s %s = %.4g: only %d of %d comparable past nights have it, %d needed (at most %d may be missing)", name, m.Metric, v, len(past), policy.Nights, need, policy.MaxMissing)
		return gr
	}
	tonight := []float64{v}
	if reps := run.RepetitionValues[m.Metric]; len(reps) > 1 {
		tonight = reps
	}
	hist := make([]float64, len(past)) // oldest first
	for i, p := range past {
		hist[len(past)-1-i] = p.value
	}
	cfg := detect.Config{HigherIsBetter: m.HigherIsBetter, MinEffectPct: m.MaxDropPct, MinHistory: MinUsedNights}
	d, err := detect.Detect(hist, tonight, cfg)
	if err != nil {
		gr.Verdict = summary.VerdictError
		gr.Message = fmt.Sprintf("%s %s = %.4g: cannot be judged: %v", name, m.Metric, v, err)
		return gr
	}
	gr.Detector = reading(d, tonight, m.MaxDropPct)
	gr.Message = fmt.Sprintf("%s %s = %.4g: %s", name, m.Metric, v, d.Why)
	if d.Status == detect.StatusInsufficientHistory {
		gr.Verdict = summary.VerdictNoBaseline
		return gr
	}
	gr.Baseline, gr.DeltaPct = &d.Baseline, pct(d.DeltaPct)
	gr.Bound = fmt.Sprintf("at most %.1f%% worse than %.4g, the mean of %d comparable nights (floor %g%%, noise %.1f%%; %s)",
		d.ThresholdPct, d.Baseline, d.Used, m.MaxDropPct, d.NoiseThresholdPct, direction(m))
	if gr.Detector.ReducedPower {
		gr.Message += fmt.Sprintf("; judged on %d nights, fewer than the %d the detector is calibrated for: a real drop is caught less often", d.Used, detect.DefaultMinHistory)
	}
	gr.Verdict = verdictOf(!d.Flagged)
	if d.Flagged {
		cp := locate(past, d.Tonight, tonightRef(sum, d.Tonight), m.HigherIsBetter, sum.Recipe)
		gr.ChangePoint = &cp
		gr.Message += "; " + describeChange(cp)
	}
	return gr
}

// reading is what the summary keeps of a decision.
func reading(d detect.Decision, tonight []float64, floor float64) *summary.Detector {
	return &summary.Detector{
		Nights: d.Nights, Used: d.Used, Outliers: d.Outliers,
		Repetitions: len(tonight), RepMin: slices.Min(tonight), RepMax: slices.Max(tonight), Tonight: d.Tonight,
		NoiseCVPct: d.NoiseCV * 100, FloorPct: floor, NoiseThresholdPct: d.NoiseThresholdPct, ThresholdPct: d.ThresholdPct,
		WorsePct: d.WorsePct, Rule: d.Rule,
		ReducedPower: d.Status != detect.StatusInsufficientHistory && d.Used < detect.DefaultMinHistory,
		Why:          d.Why,
	}
}

// pastValues reads one metric of one run out of every night's summary,
// newest first; nights without a positive finite value count as missing.
func pastValues(r baseline.Nights, run, metric string) []pastValue {
	var out []pastValue
	for _, n := range r.Nights {
		for _, b := range n.Summary.Bench {
			if b.Name != run || b.Status != summary.StatusOK {
				continue
			}
			if v, ok := b.Metrics[metric]; ok && v > 0 && !math.IsInf(v, 1) {
				out = append(out, pastValue{v, summary.NightRef{Build: n.BuildNumber, Value: v,
					ImageDigest: n.Summary.ImageDigest, VLLMCommit: n.Summary.VLLMCommit}})
			}
			break
		}
	}
	return out
}

func tonightRef(sum *summary.Summary, v float64) summary.NightRef {
	ref := summary.NightRef{Tonight: true, Value: v, ImageDigest: sum.ImageDigest, VLLMCommit: sum.VLLMCommit}
	if sum.Buildkite != nil {
		ref.Build, _ = strconv.Atoi(sum.Buildkite.BuildNumber)
	}
	return ref
}

// locate runs the change-point search over the past nights (newest
// first) and tonight, and names the last good and first bad night of the
// latest change for the worse. Without a significant one it names the
// newest past night and tonight.
func locate(past []pastValue, tonight float64, ton summary.NightRef, higherIsBetter bool, recipe string) summary.ChangePoint {
	refs := make([]summary.NightRef, 0, len(past)+1)
	series := make([]float64, 0, len(past)+1)
	for i := len(past) - 1; i >= 0; i-- {
		refs = append(refs, past[i].ref)
		series = append(series, past[i].value)
	}
	refs = append(refs, ton)
	series = append(series, tonight)
	cp := summary.ChangePoint{LastGood: refs[len(refs)-2], FirstBad: ton}
	changes := detect.ChangePoints(series, ChangePointAlpha)
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		worse := c.After < c.Before
		if !higherIsBetter {
			worse = c.After > c.Before
		}
		if worse {
			cp = summary.ChangePoint{LastGood: refs[c.Index-1], FirstBad: refs[c.Index], P: c.P, Found: true, Before: c.Before, After: c.After}
			break
		}
	}
	cp.Bisect = bisect(recipe, cp)
	return cp
}

// commitRE is what `generator trigger --vllm-commit` accepts.
var commitRE = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// bisect are the commands that would find the vLLM commit between the
// last good and the first bad night: list the commits between, and run
// the recipe's bench on any of them as a triggered build.
func bisect(recipe string, cp summary.ChangePoint) []string {
	good, bad := cp.LastGood.VLLMCommit, cp.FirstBad.VLLMCommit
	if !commitRE.MatchString(good) || !commitRE.MatchString(bad) || good == bad {
		return nil
	}
	trigger := func(commit, what string) string {
		return shell.Join([]string{"generator", "trigger", "--vllm-commit", commit, "--workloads-list", recipe, "--bench-only",
			"--message", "bisect " + recipe + ": " + what})
	}
	return []string{
		shell.Join([]string{"git", "-C", "vllm", "rev-list", "--first-parent", "--reverse", good + ".." + bad}),
		trigger(good, "last good "+good),
		trigger(bad, "first bad "+bad),
	}
}

// describeChange says in words where a regression began.
func describeChange(cp summary.ChangePoint) string {
	s := "last good " + nightName(cp.LastGood) + ", first bad " + nightName(cp.FirstBad)
	if cp.Found {
		s = fmt.Sprintf("change point (p = %.2g, mean %.4g then %.4g): %s", cp.P, cp.Before, cp.After, s)
	} else {
		s = "no significant change point in the series; " + s
	}
	if len(cp.Bisect) > 0 {
		s += "; bisect with: " + cp.Bisect[0] + ", then `generator trigger --vllm-commit <commit> --workloads-list …` on the middle one"
	}
	return s
}

func nightName(r summary.NightRef) string {
	var s string
	switch {
	case r.Tonight && r.Build > 0:
		s = fmt.Sprintf("tonight (#%d)", r.Build)
	case r.Tonight:
		s = "tonight"
	default:
		s = fmt.Sprintf("#%d", r.Build)
	}
	s += fmt.Sprintf(" %.4g", r.Value)
	if r.VLLMCommit != "" {
		s += " vLLM " + r.VLLMCommit
	}
	if r.ImageDigest != "" {
		s += " image " + r.ImageDigest
	}
	return s
}
