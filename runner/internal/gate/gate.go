// Package gate judges a run's results: accuracy bounds, bench assertions, and
// perf regressions against the recipe's past nights.
package gate

import (
	"context"
	"fmt"
	"github.com/benchkite/benchkite/internal/contract"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// Gater applies a recipe's gates to its summary.
type Gater struct {
	Res     *workloads.Resolved
	History *baseline.History
	// ResultsDir is tonight's results directory, where lm_eval logged its
	// samples (<task>/...); empty, baseline_from gates compare means only.
	ResultsDir string
	// MinPairs is the fewest paired questions the per-question test
	// decides on; paired.DefaultMinPairs when zero.
	MinPairs int
}

// Apply judges sum by every gate of the recipe: accuracy bounds, bench
// assertions and perf regressions against past nights (the server's
// start-up among them, when the recipe opts in).
func (g Gater) Apply(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	out := []summary.GateResult{}
	out = append(out, g.accuracy(ctx, sum)...)
	out = append(out, g.assertions(sum)...)
	out = append(out, g.regressions(ctx, sum)...)
	out = append(out, g.aiperfAssertions(sum)...)
	out = append(out, g.aiperfRegressions(ctx, sum)...)
	out = append(out, g.startupRegressions(ctx, sum)...)
	out = append(out, g.specDecode(sum)...)
	return out
}

// Speculative reports whether the serve arguments configure speculative
// decoding in any of the spellings vLLM accepts: --speculative-config
// with a JSON value, its dotted sub-keys (--speculative-config.method),
// underscores for dashes, and --flag=value.
func Speculative(res *workloads.Resolved) bool {
	if res.Recipe.VLLM.Serve.Speculative != nil {
		return true
	}
	for _, a := range res.Recipe.VLLM.ServeArgs {
		flag, _, _ := strings.Cut(a, "=")
		flag = strings.ReplaceAll(flag, "_", "-")
		if flag == "--speculative-config" || strings.HasPrefix(flag, "--speculative-config.") {
			return true
		}
	}
	return false
}

// specDecode checks, when the recipe speculates, that every run reported
// acceptance: a server that never drafted measured a different thing,
// and the run cannot say whether speculation works.
func (g Gater) specDecode(sum *summary.Summary) []summary.GateResult {
	if !Speculative(g.Res) {
		return nil
	}
	var out []summary.GateResult
	for _, planned := range g.Res.BenchRuns {
		gr := summary.GateResult{Kind: summary.GateSpecDecode, Subject: planned.Name, Metric: "spec_decode_acceptance_rate", Bound: "reported (speculative decoding is configured)"}
		run := benchRun(sum, planned.Name)
		if run == nil || run.Status != summary.StatusOK {
			_, why := benchValue(run, "")
			out = append(out, unmeasured(gr, sum, summary.PhaseBench, why))
			continue
		}
		if run.SpecDecode == nil {
			gr.Verdict = summary.VerdictUnverified
			gr.Message = fmt.Sprintf("%s: speculative decoding is configured but %s reports no acceptance metrics: the server may not have speculated", planned.Name, orFile(run.File))
			out = append(out, gr)
			continue
		}
		v := run.SpecDecode.AcceptanceRate
		gr.Value = &v
		gr.Verdict = summary.VerdictPass
		gr.Message = fmt.Sprintf("%s: acceptance rate %.1f%%, mean length %.2f", planned.Name, v, run.SpecDecode.AcceptanceLength)
		out = append(out, gr)
	}
	return out
}

func pct(delta float64) *float64 { return &delta }

// judged is one accuracy result with the expectations on it: an lm_eval
// task entry, or a BFCL category (bfcl_<category>, metric acc).
type judged struct {
	Name   string
	Expect []workloads.Expectation
	Phase  string // the phase that measures it
	// Entry is the run whose result it judges (summary.TaskResult.Entry):
	// two entries of one name are judged each on its own.
	Entry string
}

// accuracyGates are every lm_eval task entry's and BFCL category's
// expectations.
func (g Gater) accuracyGates() []judged {
	var out []judged
	names := make([]string, len(g.Res.Tasks))
	for i, t := range g.Res.Tasks {
		names[i] = t.Name
	}
	dirs := contract.TaskDirs(names)
	for i, t := range g.Res.Tasks {
		out = append(out, judged{t.Name, t.Expect, summary.PhaseLMEval, dirs[i]})
	}
	if b := g.Res.BFCL; b != nil {
		for _, bg := range b.Gates {
			e := bg.Expect
			e.Metric = workloads.BFCLMetric
			out = append(out, judged{workloads.BFCLResultName(bg.Category), []workloads.Expectation{e}, summary.PhaseBFCL, bfclEntry(b.TestCategories, bg.Category)})
		}
	}
	return out
}

// bfclEntry is the run a BFCL gate on category judges: the category's own
// run when it is listed, else the first listed group it is a leaf of.
func bfclEntry(listed []string, category string) string {
	if slices.Contains(listed, category) {
		return "bfcl/" + category
	}
	for _, c := range listed {
		if leaves, _ := workloads.BFCLLeaves(c); slices.Contains(leaves, category) {
			return "bfcl/" + c
		}
	}
	return "bfcl/" + category
}

// resultOf is the accuracy result of entry t: the one its own run wrote.
// A result without an entry (written before entries were recorded) is
// taken only when it is the one result of that name.
func resultOf(sum *summary.Summary, t judged) int {
	var bare []int
	for i := range sum.Accuracy {
		a := &sum.Accuracy[i]
		if a.Task != t.Name {
			continue
		}
		if a.Entry == t.Entry {
			return i
		}
		if a.Entry == "" {
			bare = append(bare, i)
		}
	}
	if len(bare) == 1 {
		return bare[0]
	}
	return -1
}

// DefaultFloor is the accuracy score at or below which a task fails
// whatever its baseline says, when the recipe gives no min: a score of 0
// means the server answered nothing right, which no baseline excuses.
const DefaultFloor = 0.0

// notPlanned says why a subject's phase was not planned ("bench only"),
// or "" when it was: only then is a missing value not an error.
func notPlanned(sum *summary.Summary, phase string) string {
	if p := sum.Phase(phase); p != nil && p.Status == summary.StatusSkipped {
		return p.Error
	}
	return ""
}

// unmeasured is a gate whose value is missing: skipped when its phase was
// not planned, an error otherwise.
func unmeasured(gr summary.GateResult, sum *summary.Summary, phase, why string) summary.GateResult {
	if np := notPlanned(sum, phase); np != "" {
		gr.Verdict = summary.VerdictSkipped
		gr.Message = fmt.Sprintf("%s %s: not planned (%s)", gr.Subject, gr.Metric, np)
		return gr
	}
	gr.Verdict = summary.VerdictError
	gr.Message = fmt.Sprintf("%s %s: not measured: %s", gr.Subject, gr.Metric, why)
	return gr
}

// accuracy judges every accuracy result by the expectations on it, and
// fails every score at or below DefaultFloor that none of them judged.
func (g Gater) accuracy(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	var out []summary.GateResult
	floored := map[[2]string]bool{} // (entry index, metric) given a floor gate
	for _, t := range g.accuracyGates() {
		var tr *summary.TaskResult
		if i := resultOf(sum, t); i >= 0 {
			tr = &sum.Accuracy[i]
			for _, e := range t.Expect {
				floored[[2]string{strconv.Itoa(i), e.Metric}] = true
			}
		}
		for _, e := range t.Expect {
			out = append(out, g.judgeExpectation(ctx, sum, t, tr, e)...)
		}
	}
	return append(out, floors(sum, floored)...)
}

// judgeExpectation judges result tr of t by one expectation: the floor,
// the min, and the baseline or the other recipe's score it names, each a
// gate of its own.
func (g Gater) judgeExpectation(ctx context.Context, sum *summary.Summary, t judged, tr *summary.TaskResult, e workloads.Expectation) []summary.GateResult {
	gr := summary.GateResult{Kind: summary.GateAccuracy, Subject: t.Name, Metric: e.Metric, Bound: describeBound(e)}
	value, ok, why := taskScore(tr, e.Metric)
	if !ok {
		return []summary.GateResult{unmeasured(gr, sum, t.Phase, why)}
	}
	gr.Value = &value
	var out []summary.GateResult
	if (e.Min == nil || *e.Min <= DefaultFloor) && value <= DefaultFloor {
		c := gr
		c.Bound = "> " + numfmt.Exact(DefaultFloor)
		c.Verdict = summary.VerdictFail
		c.Message = fmt.Sprintf("%s %s = %.4f, at or below the floor %s: fails whatever the baseline says", t.Name, e.Metric, value, numfmt.Exact(DefaultFloor))
		out = append(out, c)
	}
	if e.Min != nil {
		c := gr
		c.Bound = ">= " + numfmt.Exact(*e.Min)
		c.Verdict = verdictOf(value >= *e.Min)
		c.Message = fmt.Sprintf("%s %s = %.4f, must be %s", t.Name, e.Metric, value, c.Bound)
		out = append(out, c)
	}
	if e.Baseline == nil && e.BaselineFrom == "" {
		return out
	}
	return append(out, g.againstBaseline(ctx, sum, gr, t, e, value))
}

// taskScore is the metric of task result tr, or why there is none.
func taskScore(tr *summary.TaskResult, metric string) (value float64, ok bool, why string) {
	why = "the task did not run"
	if tr == nil {
		return 0, false, why
	}
	why = fmt.Sprintf("the task is %s", tr.Status)
	if tr.Error != "" {
		why += ": " + tr.Error
	}
	if tr.Status == summary.StatusOK {
		value, ok = tr.Metrics[metric]
		why = fmt.Sprintf("%s has no key %q (it has %s)", orFile(tr.File), metric, keyList(tr.Metrics))
	}
	return value, ok, why
}

// againstBaseline judges value against the expectation's baseline, or the
// score of the recipe its baseline_from names: a score may rise, but not
// fall by more than the tolerance. Against another recipe's lm_eval
// score the per-question test decides where it can.
func (g Gater) againstBaseline(ctx context.Context, sum *summary.Summary, gr summary.GateResult, t judged, e workloads.Expectation, value float64) summary.GateResult {
	c := gr
	if e.BaselineFrom != "" {
		tol := e.Tolerance
		c.BaselineFrom, c.Tolerance = e.BaselineFrom, &tol
		if e.Alpha > 0 {
			alpha := e.Alpha
			c.Alpha = &alpha
		}
	}
	var base float64
	var source, note string
	var night baseline.Past
	if e.Baseline != nil {
		base, source = *e.Baseline, "baseline"
	} else {
		b, from, n, p, err := g.otherRecipeScore(ctx, sum, e.BaselineFrom, t.Name, e.Metric)
		if err != nil {
			c.Verdict = summary.VerdictNoBaseline
			c.Bound = fmt.Sprintf("within %s of %s", numfmt.Exact(e.Tolerance), e.BaselineFrom)
			c.Message = fmt.Sprintf("%s %s = %.4f: no baseline from %s (%v)", t.Name, e.Metric, value, e.BaselineFrom, err)
			return c
		}
		base, source, note, night = b, from, n, p
	}
	c.Baseline = &base
	if base != 0 {
		c.DeltaPct = pct((value - base) / base * 100)
	}
	c.Bound = fmt.Sprintf(">= %.4f (%s %.4f - %s)", base-e.Tolerance, source, base, numfmt.Exact(e.Tolerance))
	// A score may rise, but not fall by more than the tolerance.
	c.Verdict = verdictOf(value >= base-e.Tolerance-1e-12)
	c.Message = fmt.Sprintf("%s %s = %.4f vs %s %.4f (Δ %+.4f, tolerance %s)%s", t.Name, e.Metric, value, source, base, value-base, numfmt.Exact(e.Tolerance), note)
	if e.BaselineFrom != "" && t.Phase == summary.PhaseLMEval {
		c = g.judgePerQuestion(ctx, c, night, e, t, source, note)
	}
	return c
}

// judgePerQuestion judges gate c, on the means of night of another
// recipe, by the per-question test where it can be made; where it cannot,
// the means decide, and a passing mean is unverified when the test was
// due.
func (g Gater) judgePerQuestion(ctx context.Context, c summary.GateResult, night baseline.Past, e workloads.Expectation, t judged, source, note string) summary.GateResult {
	pr, why, unverified := g.pairedTest(ctx, night, e, t.Name, t.Entry, note)
	switch {
	case pr != nil:
		// The per-question test decides alone; the means and
		// the tolerance are shown, not judged.
		c.Paired = pr
		c.Verdict = verdictOf(!pr.Fail)
		if pr.Unverified {
			c.Verdict = summary.VerdictUnverified
		}
		c.Message = fmt.Sprintf("%s %s vs %s, per question: %s%s", t.Name, e.Metric, source, pr.Why, note)
	case unverified && c.Verdict == summary.VerdictPass:
		// A failing mean still fails; a passing one is not
		// the per-question test that was due.
		c.Verdict = summary.VerdictUnverified
		c.Message += "; not compared per question: " + why
	default:
		c.Message += "; judged on the means, not per question: " + why
	}
	return c
}

// floors fails every accuracy score at or below DefaultFloor that no gate
// of the recipe judged: a task or BFCL category without an expect block
// that scored nothing has still measured a broken server.
func floors(sum *summary.Summary, judged map[[2]string]bool) []summary.GateResult {
	var out []summary.GateResult
	for i, a := range sum.Accuracy {
		if a.Status != summary.StatusOK {
			continue
		}
		for _, m := range summary.SortedKeys(a.Metrics) {
			v := a.Metrics[m]
			if judged[[2]string{strconv.Itoa(i), m}] || v > DefaultFloor {
				continue
			}
			value := v
			out = append(out, summary.GateResult{Kind: summary.GateAccuracy, Subject: a.Task, Metric: m, Value: &value,
				Bound: "> " + numfmt.Exact(DefaultFloor), Verdict: summary.VerdictFail,
				Message: fmt.Sprintf("%s %s = %.4f, at or below the floor %s: fails though no gate names it", a.Task, m, v, numfmt.Exact(DefaultFloor))})
		}
	}
	return out
}

func orFile(f string) string {
	if f == "" {
		return "the results"
	}
	return f
}

// keyList names the keys a result has, for a missing-key message.
func keyList(m map[string]float64) string {
	keys := summary.SortedKeys(m)
	if len(keys) == 0 {
		return "no numeric keys"
	}
	const most = 8
	if len(keys) > most {
		return strings.Join(keys[:most], ", ") + fmt.Sprintf(" and %d more", len(keys)-most)
	}
	return strings.Join(keys, ", ")
}

// BaselineFromNights is how many of another recipe's nights a
// baseline_from gate looks through for one that ran tonight's image.
const BaselineFromNights = contract.TrendNights

// otherRecipeScore reads a task metric from another recipe's latest
// passing nightly that ran the same model on the same image digest as
// tonight, else from its latest passing nightly, saying that the images
// differ. (The report step compares per question when both recipes ran
// in the same build; a GPU job has only the other recipe's summaries.)
func (g Gater) otherRecipeScore(ctx context.Context, sum *summary.Summary, recipe, task, metric string) (value float64, source, note string, night baseline.Past, err error) {
	r, err := g.History.Last(ctx, recipe, BaselineFromNights)
	if err != nil {
		return 0, "", "", night, err
	}
	passing := r.Passing()
	if len(passing) == 0 {
		return 0, "", "", night, fmt.Errorf("%w: no passing nightly of %s among its last %d", baseline.ErrNoBaseline, recipe, len(r.Nights))
	}
	n := passing[0]
	if sum.ImageDigest != "" {
		same := slices.IndexFunc(passing, func(p baseline.Past) bool {
			return p.Summary.ImageDigest == sum.ImageDigest && p.Summary.Model == sum.Model
		})
		if same >= 0 {
			n = passing[same]
		} else {
			note = fmt.Sprintf("; the images differ (tonight %s, #%d %s): a change may be the image's, not speculation's", sum.ImageDigest, n.BuildNumber, orUnpinned(n.Summary.ImageDigest))
		}
	}
	for _, a := range n.Summary.Accuracy {
		if a.Task == task && a.Status == summary.StatusOK {
			if v, ok := a.Metrics[metric]; ok {
				return v, fmt.Sprintf("%s #%d", recipe, n.BuildNumber), note, n, nil
			}
		}
	}
	return 0, "", "", n, fmt.Errorf("%w: %s #%d has no %s %s", baseline.ErrNoBaseline, recipe, n.BuildNumber, task, metric)
}

// pairedTest compares tonight's per-question outcomes of the task entry
// (the compact file the job wrote from lm_eval's samples) with those the
// history step kept of night. It returns the comparison; or why there is
// none and whether that leaves the gate unverified: a night that kept no
// outcomes leaves the means to decide, but a file that is there and
// cannot be read, or tonight's missing, is a check that could not be
// made, never a quiet fall-back to the means.
func (g Gater) pairedTest(ctx context.Context, night baseline.Past, e workloads.Expectation, task, entry, note string) (*summary.Paired, string, bool) {
	against := fmt.Sprintf("%s #%d", e.BaselineFrom, night.BuildNumber)
	stored := outcomesOf(night, task)
	if stored == nil {
		return nil, fmt.Sprintf("the build's history holds no per-question outcomes of %s %s", against, task), false
	}
	if stored.Missing != "" {
		return nil, fmt.Sprintf("%s: no per-question outcomes: %s", against, stored.Missing), strings.Contains(stored.Missing, "could not")
	}
	right, err := stored.Right(e.Metric)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", against, err), true
	}
	if g.ResultsDir == "" {
		return nil, "tonight's results directory is not known", true
	}
	tonight, err := baseline.ReadOutcomesFile(filepath.Join(g.ResultsDir, entry, baseline.OutcomesFile))
	if err != nil {
		return nil, fmt.Sprintf("tonight's per-question outcomes: %v", err), true
	}
	metric, filter, _ := strings.Cut(e.Metric, ",")
	minAgree, agreeNote := g.expectedAgreement(ctx, e.BaselineFrom, task, e.Metric)
	r, err := paired.CompareOutcomes(paired.Outcomes{Source: against, Right: right, ByHash: stored.ByHash()}, tonight.Samples(),
		paired.Options{Metric: metric, Filter: filter, Alpha: e.Alpha, MinAgreement: minAgree, MinPairs: g.MinPairs})
	if err != nil {
		return nil, err.Error(), true
	}
	return &summary.Paired{Against: against, Pairs: r.Pairs, Agreement: r.OutcomeAgreement, B: r.B, C: r.C, P: r.P,
		Alpha: r.Alpha, Delta: r.Delta, Fail: r.Fail, Unverified: r.Unverified, Why: r.Why + agreeNote, Note: strings.TrimPrefix(note, "; ")}, "", false
}

func outcomesOf(night baseline.Past, task string) *baseline.Outcomes {
	for i := range night.Outcomes {
		if night.Outcomes[i].Task == task {
			return &night.Outcomes[i]
		}
	}
	return nil
}

// expectedAgreement is the share of questions the run without
// speculation scores alike on two of its own nights (greedy decoding is
// not bit-exact across nights), less three standard errors: the least
// agreement speculation must show. Without two such nights it is 0 (not
// gated) and the note says so.
func (g Gater) expectedAgreement(ctx context.Context, recipe, task, metric string) (float64, string) {
	r, err := g.History.Last(ctx, recipe, BaselineFromNights)
	var outs []map[string]bool
	if err == nil {
		for _, n := range r.Passing() {
			if o := outcomesOf(n, task); o != nil && !o.ByHash() {
				if right, err := o.Right(metric); err == nil {
					outs = append(outs, right)
				}
			}
		}
	}
	if len(outs) < 2 {
		return 0, "; agreement not gated: fewer than two nights of " + recipe + " with per-question outcomes"
	}
	same, n := 0, 0
	for k, v := range outs[0] {
		if w, ok := outs[1][k]; ok {
			n++
			if v == w {
				same++
			}
		}
	}
	if n == 0 {
		return 0, "; agreement not gated: two nights of " + recipe + " share no question"
	}
	p := float64(same) / float64(n)
	return max(0, p-3*math.Sqrt(p*(1-p)/float64(n))), fmt.Sprintf("; agreement gated at %.1f%% (%s agrees with itself on %.1f%% of %d questions across nights)", max(0, p-3*math.Sqrt(p*(1-p)/float64(n)))*100, recipe, p*100, n)
}

func orUnpinned(digest string) string {
	if digest == "" {
		return "an unpinned image"
	}
	return digest
}

func describeBound(e workloads.Expectation) string {
	var parts []string
	if e.Min != nil {
		parts = append(parts, ">= "+numfmt.Exact(*e.Min))
	}
	if e.Baseline != nil {
		parts = append(parts, fmt.Sprintf("baseline %s - %s", numfmt.Exact(*e.Baseline), numfmt.Exact(e.Tolerance)))
	}
	if e.BaselineFrom != "" {
		parts = append(parts, fmt.Sprintf("within %s of %s", numfmt.Exact(e.Tolerance), e.BaselineFrom))
	}
	return strings.Join(parts, ", ")
}

func verdictOf(ok bool) string {
	if ok {
		return summary.VerdictPass
	}
	return summary.VerdictFail
}

// configOf finds a bench run's config in the recipe.
func (g Gater) configOf(config string) *workloads.BenchConfig {
	if g.Res.Recipe.Bench == nil {
		return nil
	}
	for i := range g.Res.Recipe.Bench.Configs {
		if g.Res.Recipe.Bench.Configs[i].Name == config {
			return &g.Res.Recipe.Bench.Configs[i]
		}
	}
	return nil
}

// benchRun finds the summary entry of a planned run, or nil.
func benchRun(sum *summary.Summary, name string) *summary.BenchRun {
	for i := range sum.Bench {
		if sum.Bench[i].Name == name {
			return &sum.Bench[i]
		}
	}
	return nil
}

// benchValue is a planned run's metric, or why there is none.
func benchValue(run *summary.BenchRun, metric string) (float64, string) {
	if run == nil {
		return 0, "the run did not happen"
	}
	if run.Status != summary.StatusOK {
		why := "the run is " + run.Status
		if run.Error != "" {
			why += ": " + firstLine(run.Error)
		}
		return 0, why
	}
	v, ok := run.Metrics[metric]
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Sprintf("%s has no numeric key %q", orFile(run.File), metric)
	}
	return v, ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// assertions checks absolute bounds on the median result of every
// planned run; a run only has a median once every repetition was valid.
func (g Gater) assertions(sum *summary.Summary) []summary.GateResult {
	var out []summary.GateResult
	for _, planned := range g.Res.BenchRuns {
		c := g.configOf(planned.Config)
		if c == nil {
			continue
		}
		run := benchRun(sum, planned.Name)
		for _, a := range c.Assertions {
			gr := summary.GateResult{Kind: summary.GateBench, Subject: planned.Name, Metric: a.Metric, Bound: boundText(a)}
			v, why := benchValue(run, a.Metric)
			if why != "" {
				out = append(out, unmeasured(gr, sum, summary.PhaseBench, why))
				continue
			}
			gr.Value = &v
			pass := (a.Min == nil || v >= *a.Min) && (a.Max == nil || v <= *a.Max)
			gr.Verdict = verdictOf(pass)
			gr.Message = fmt.Sprintf("%s %s = %s, must be %s", planned.Name, a.Metric, numfmt.Sig(v, 4), gr.Bound)
			out = append(out, gr)
		}
	}
	return out
}

func boundText(a workloads.Assertion) string {
	switch {
	case a.Min != nil && a.Max != nil:
		return fmt.Sprintf("in [%s, %s]", numfmt.Exact(*a.Min), numfmt.Exact(*a.Max))
	case a.Min != nil:
		return ">= " + numfmt.Exact(*a.Min)
	default:
		return "<= " + numfmt.Exact(*a.Max)
	}
}
