package gate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/internal/shell"
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

// pastValue is one past night's value of a metric.
type pastValue struct {
	value float64
	reps  int // repetitions value is the median of
	ref   summary.NightRef
	fp    *summary.Fingerprint
	at    time.Time
	// flagged: that night's regression gate on the metric failed;
	// judged: it recorded a verdict on the metric at all; accepted: it
	// was judged with a regression accepted (regression.accept).
	flagged, judged, accepted bool
	// det is the night's detector reading of the metric, nil when it
	// recorded none: it says whether the night was an unconfirmed spike
	// and hands on a regression still open.
	det *summary.Detector
}

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

// series are a metric's past nights, oldest first, with the known change
// points in them: where the recipe's fingerprint changed and where an
// accepted regression's level begins.
type series struct {
	values []float64
	past   []pastValue // oldest first
	known  []int
	notes  []string
	// flagged are the nights whose gate flagged the metric; nil when no
	// night recorded a verdict on it. unconfirmed are the nights it
	// judged unconfirmed spikes.
	flagged, unconfirmed []int
	// accepting: an accepted level of the metric holds tonight.
	accepting bool
}

func seriesOf(past []pastValue, sum *summary.Summary, accept *workloads.Accept, m workloads.RegressionMetric, tonightBuild int, now time.Time) series {
	var s series
	for i := len(past) - 1; i >= 0; i-- {
		if past[i].judged && s.flagged == nil {
			s.flagged = []int{} // verdicts known, if none flagged
		}
		if past[i].flagged {
			s.flagged = append(s.flagged, len(s.past))
		}
		if past[i].det != nil && past[i].det.Unconfirmed {
			s.unconfirmed = append(s.unconfirmed, len(s.past))
		}
		s.past = append(s.past, past[i])
		s.values = append(s.values, past[i].value)
	}
	for i := 1; i < len(s.past); i++ {
		a, b := s.past[i-1].fp, s.past[i].fp
		if a != nil && b != nil && a.Hash != b.Hash {
			s.known = append(s.known, i)
			s.notes = append(s.notes, fmt.Sprintf("recipe changed at #%d (%s)", s.past[i].ref.Build, strings.Join(b.Changed(a), ", ")))
		}
	}
	if n := len(s.past); n > 0 && sum.Fingerprint != nil && s.past[n-1].fp != nil && s.past[n-1].fp.Hash != sum.Fingerprint.Hash {
		s.notes = append(s.notes, fmt.Sprintf("recipe changed tonight (%s): judged against the nights of the old recipe, the latest #%d at %s",
			strings.Join(sum.Fingerprint.Changed(s.past[n-1].fp), ", "), s.past[n-1].ref.Build, numfmt.Sig(s.past[n-1].value, 4)))
	}
	if level, named := accept.Level(m.Metric); named {
		after := func(p pastValue) bool {
			if accept.Build > 0 {
				return p.ref.Build >= accept.Build
			}
			return !p.at.IsZero() && !p.at.Before(accept.Date)
		}
		i := slices.IndexFunc(s.past, after)
		tonightAccepted := accept.Build > 0 && tonightBuild >= accept.Build || accept.Build == 0 && !now.Before(accept.Date)
		if i >= 0 || tonightAccepted {
			s.accepting = true
			cut := i
			if i < 0 {
				cut = len(s.past)
			} else {
				// Nights of the accepted level flagged before the
				// acceptance were flagged for the regression now
				// accepted: settled.
				s.flagged = slices.DeleteFunc(s.flagged, func(j int) bool { return j >= i && !s.past[j].accepted })
			}
			// The nights before the accepted level count at that level:
			// the accepted worsening is no regression, anything beyond it
			// is judged as usual, on the first night of the level too.
			worse := 1 + level/100
			if m.HigherIsBetter {
				worse = 1 - level/100
			}
			for j := range cut {
				s.values[j] *= worse
			}
			if cut > 0 {
				first := "tonight"
				if i >= 0 {
					first = "#" + strconv.Itoa(s.past[i].ref.Build)
				}
				s.notes = append(s.notes, fmt.Sprintf("regression of %s accepted since %s (%s): up to %s%% worse from %s on, so the %d night(s) before count %s%% worse",
					m.Metric, accept.Since, accept.Reason, numfmt.Exact(level), first, cut, numfmt.Exact(level)))
			}
		}
	}
	slices.Sort(s.known)
	return s
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

// pastValues reads one metric of one run out of every night's summary,
// newest first; nights without a positive finite value count as missing.
// A recipe change is a known change point in one series, except for a
// run whose own shape changed (its line, by key, in tonight's fingerprint
// differs from the night's): the nights before measured another
// workload, and are left out, as note says.
func pastValues(r baseline.Nights, run, metric, key string, tonight *summary.Fingerprint) (out []pastValue, note string) {
	line := benchLine(tonight, key)
	for _, n := range r.Nights {
		if old := benchLine(n.Summary.Fingerprint, key); line != "" && old != "" && old != line {
			note = fmt.Sprintf("the bench config of %s changed after #%d: the nights before measured another workload and are not compared", run, n.BuildNumber)
			break
		}
		for _, b := range nightRuns(n.Summary, run) {
			if b.Name != run || b.Status != summary.StatusOK {
				continue
			}
			if v, ok := b.Metrics[metric]; ok && v > 0 && !math.IsInf(v, 1) {
				flagged, judged, accepted, det := verdictOn(n.Summary, run, metric)
				out = append(out, pastValue{v, max(1, len(b.RepetitionValues[metric])), summary.NightRef{Build: n.BuildNumber, Value: v,
					ImageDigest: n.Summary.ImageDigest, VLLMCommit: n.Summary.VLLMCommit}, n.Summary.Fingerprint, n.CreatedAt,
					flagged, judged, accepted, det})
			}
			break
		}
	}
	return out, note
}

// withNote is "; note", or "" for no note.
func withNote(note string) string {
	if note == "" {
		return ""
	}
	return "; " + note
}

// shapeKey names a run's line in a fingerprint: a bench run's name, an
// aiperf point's config.
func shapeKey(run *summary.BenchRun) string {
	if run.Backend == "aiperf" {
		return run.Config
	}
	return run.Name
}

// benchLine is the fingerprint's line for key's shape, "" when the
// fingerprint has none. How many repetitions a night runs is left out:
// more of them measure the same workload more often.
func benchLine(fp *summary.Fingerprint, key string) string {
	if fp == nil || key == "" {
		return ""
	}
	for _, l := range fp.Parts.Bench {
		if strings.HasPrefix(l, key+" ") {
			return repsRE.ReplaceAllString(l, "")
		}
	}
	return ""
}

// repsRE is the repetitions field of a bench run's fingerprint line.
var repsRE = regexp.MustCompile(` reps=[0-9]+`)

// verdictOn says whether a night's regression gate on a run's metric
// failed (the detector flagged it), whether it passed or failed at all,
// whether a regression was accepted when it was judged, and what its
// detector read.
func verdictOn(s summary.Summary, run, metric string) (flagged, judged, accepted bool, det *summary.Detector) {
	for _, g := range s.Gates {
		if g.Kind != summary.GateRegression || g.Subject != run || g.Metric != metric {
			continue
		}
		accepted = g.Detector != nil && g.Detector.Accepted != ""
		switch g.Verdict {
		case summary.VerdictFail:
			return true, true, accepted, g.Detector
		case summary.VerdictPass:
			return false, true, accepted, g.Detector
		}
	}
	return false, false, false, nil
}

// carriedOf is the open regression the newest judged night of s handed
// on, with the build it began on (carry.Index is -1 when that night has
// left the history); nil when none is open.
func carriedOf(s series) (*detect.Carried, int) {
	for i := len(s.past) - 1; i >= 0; i-- {
		p := s.past[i]
		if !p.judged {
			continue
		}
		d := p.det
		if d == nil || !(d.OpenLevel > 0) || math.IsInf(d.OpenLevel, 0) {
			return nil, 0
		}
		if s.accepting && !p.accepted {
			// Judged before the regression was accepted: the one it
			// carried is the one accepted, settled.
			return nil, 0
		}
		c := &detect.Carried{Index: -1, Level: math.Log(d.OpenLevel), WorsePct: d.OpenWorsePct, Passed: d.OpenPassed, Held: d.OpenHeld, P: d.OpenP,
			LevelNights: d.OpenLevelNights}
		if j := slices.IndexFunc(s.past, func(p pastValue) bool { return p.ref.Build == d.OpenSince }); j >= 0 {
			c.Index = j
		}
		return c, d.OpenSince
	}
	return nil, 0
}

// pastReps is how many repetitions the past nights' values are typically
// the median of: tonight's runs beyond that many narrow its spread.
func pastReps(past []pastValue) int {
	if len(past) == 0 {
		return 1
	}
	n := make([]int, len(past))
	for i, p := range past {
		n[i] = p.reps
	}
	slices.Sort(n)
	return n[len(n)/2]
}

func tonightRef(sum *summary.Summary, v float64) summary.NightRef {
	ref := summary.NightRef{Tonight: true, Value: v, ImageDigest: sum.ImageDigest, VLLMCommit: sum.VLLMCommit}
	if sum.Buildkite != nil {
		ref.Build, _ = strconv.Atoi(sum.Buildkite.BuildNumber)
	}
	return ref
}

// culprit names the last good and first bad nights of the detector's
// range, past (oldest first) followed by tonight.
func culprit(past []pastValue, d detect.Decision, ton summary.NightRef, recipe string) summary.ChangePoint {
	at := func(i int) summary.NightRef {
		if i >= len(past) {
			return ton
		}
		return past[max(i, 0)].ref
	}
	cp := summary.ChangePoint{LastGood: at(d.LastGood), FirstBad: at(d.FirstBad), Widened: d.Widened}
	if d.Open != nil {
		cp.Found, cp.P = true, d.Open.P
		for _, c := range d.Changes {
			if c.Index == d.Open.Index {
				cp.Before, cp.After = math.Exp(c.Before), math.Exp(c.After)
			}
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
	if cp.LastGood == (summary.NightRef{}) && !cp.FirstBad.Tonight && cp.FirstBad.Value == 0 {
		return fmt.Sprintf("began with #%d (before the nights the history holds)", cp.FirstBad.Build)
	}
	s := "last good " + nightName(cp.LastGood) + ", first bad " + nightName(cp.FirstBad)
	if cp.Found {
		s = fmt.Sprintf("change point (p %s, mean %s then %s): %s", numfmt.P(cp.P), numfmt.Sig(cp.Before, 4), numfmt.Sig(cp.After, 4), s)
	}
	if cp.Widened {
		s += " (widened by a night each side: the evidence is weak)"
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
	s += " " + numfmt.Sig(r.Value, 4)
	if r.VLLMCommit != "" {
		s += " vLLM " + r.VLLMCommit
	}
	if r.ImageDigest != "" {
		s += " image " + r.ImageDigest
	}
	return s
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
