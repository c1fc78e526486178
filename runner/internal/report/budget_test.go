package report

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

func TestBudgetAndLifecycleLines(t *testing.T) {
	t.Parallel()
	reg := func(p float64, verdict string, d summary.Detector) summary.GateResult {
		d.P = p
		return summary.GateResult{Kind: summary.GateRegression, Subject: "c", Metric: "output_throughput", Verdict: verdict, Detector: &d}
	}
	sums := []summary.Summary{
		{Recipe: "slow", Verdict: summary.VerdictFail, Gates: []summary.GateResult{reg(1e-9, summary.VerdictFail, summary.Detector{OpenSince: 41})}},
		{Recipe: "unlucky", Verdict: summary.VerdictFail, Gates: []summary.GateResult{reg(0.009, summary.VerdictFail, summary.Detector{})}},
		// Open for three nights, yet within tonight's budget: no red line.
		{Recipe: "wobbly", Verdict: summary.VerdictFail, Gates: []summary.GateResult{reg(0.008, summary.VerdictFail, summary.Detector{OpenSince: 39})}},
		{Recipe: "accepted", Verdict: summary.VerdictPass, Gates: []summary.GateResult{reg(0.6, summary.VerdictPass, summary.Detector{Accepted: "since 40: fp8 kv cache"})}},
	}
	for range 40 {
		sums = append(sums, summary.Summary{Recipe: "ok", Verdict: summary.VerdictPass, Gates: []summary.GateResult{reg(0.5, summary.VerdictPass, summary.Detector{})}})
	}
	b := gate.SpendBudget(sums, 0.05)
	build := gate.JudgeBuild(sums, nil, b)
	verdicts := map[string]string{}
	for _, r := range build.Rows {
		verdicts[r.Summary.Recipe] = r.Verdict
	}
	if verdicts["slow"] != gate.RowRegressed || verdicts["unlucky"] != summary.VerdictPass || verdicts["wobbly"] != summary.VerdictPass || sums[1].Verdict != summary.VerdictFail {
		t.Errorf("verdicts within the budget = %v (input left %q); want slow regressed, unlucky and wobbly pass (input unchanged)", verdicts, sums[1].Verdict)
	}
	if build.Failing != 1 || build.Exit != 1 {
		t.Errorf("Failing, Exit = %d, %d, want 1, 1", build.Failing, build.Exit)
	}
	body := renderBudget(b) + renderLifecycle(build.Rows)
	for _, want := range []string{
		"False-alarm budget: Benjamini–Hochberg at 5% over 44 regression tests: 3 flagged, 1 fail the build; within the budget, not failures: `unlucky` c output_throughput (p = 0.009), `wobbly` c output_throughput (p = 0.008)",
		"- open regression: `slow` c output_throughput since #41; red until fixed or accepted",
		"- released regression: `wobbly` c output_throughput, open since #39 (p = 0.008): within the build's false-alarm budget, not a failure tonight; red on a night the budget keeps it, until fixed or accepted\n",
		"- accepted regression: `accepted` c output_throughput since 40: fp8 kv cache",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("report lacks %q:\n%s", want, body)
		}
	}
	if n := strings.Count(body, "red until fixed or accepted"); n != 1 {
		t.Errorf("report says %d regression(s) stay red, want 1 (slow's):\n%s", n, body)
	}
}
