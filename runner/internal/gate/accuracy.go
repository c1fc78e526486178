package gate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

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
