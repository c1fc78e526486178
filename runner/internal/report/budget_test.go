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
		{Recipe: "accepted", Verdict: summary.VerdictPass, Gates: []summary.GateResult{reg(0.6, summary.VerdictPass, summary.Detector{Accepted: "since 40: fp8 kv cache"})}},
	}
	for range 40 {
		sums = append(sums, summary.Summary{Recipe: "ok", Verdict: summary.VerdictPass, Gates: []summary.GateResult{reg(0.5, summary.VerdictPass, summary.Detector{})}})
	}
	b := gate.SpendBudget(sums, 0.05)
	build := gate.JudgeBuild(sums, nil, b)
	judged := judgedSummaries(build)
	verdicts := map[string]string{}
	for _, r := range build.Rows {
		verdicts[r.Summary.Recipe] = r.Verdict
	}
	if verdicts["slow"] != gate.RowRegressed || verdicts["unlucky"] != summary.VerdictPass || sums[1].Verdict != summary.VerdictFail {
		t.Errorf("verdicts within the budget = %v (input left %q); want slow regressed, unlucky pass (input unchanged)", verdicts, sums[1].Verdict)
	}
	if build.Failing != 1 || build.Exit != 1 {
		t.Errorf("Failing, Exit = %d, %d, want 1, 1", build.Failing, build.Exit)
	}
	body := renderBudget(b) + renderLifecycle(judged)
	for _, want := range []string{
		"False-alarm budget: Benjamini–Hochberg at 5% over 43 regression tests: 2 flagged, 1 fail the build; within the budget, not failures: `unlucky` c output_throughput (p = 0.009)",
		"- open regression: `slow` c output_throughput since #41; red until fixed or accepted",
		"- accepted regression: `accepted` c output_throughput since 40: fp8 kv cache",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("report lacks %q:\n%s", want, body)
		}
	}
}
