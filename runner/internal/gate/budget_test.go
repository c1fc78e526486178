package gate

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Sixty regression tests: one flagged at p = 0.004 (a night's bad luck
// among many) is released by the budget, one at 1e-9 fails the build.
func TestSpendBudget(t *testing.T) {
	t.Parallel()
	reg := func(subject string, p float64, verdict string) summary.GateResult {
		return summary.GateResult{Kind: summary.GateRegression, Subject: subject, Metric: "output_throughput", Verdict: verdict,
			Detector: &summary.Detector{P: p}}
	}
	var sums []summary.Summary
	for i := range 20 {
		s := summary.Summary{Recipe: fmt.Sprintf("r%d", i), Verdict: summary.VerdictPass}
		for j := range 3 {
			s.Gates = append(s.Gates, reg(fmt.Sprintf("c%d", j), 0.2+0.01*float64(i+j), summary.VerdictPass))
		}
		sums = append(sums, s)
	}
	sums[3].Gates[0] = reg("c0", 0.004, summary.VerdictFail)
	sums[3].Verdict = summary.VerdictFail
	sums[7].Gates[1] = reg("c1", 1e-9, summary.VerdictFail)
	sums[7].Gates = append(sums[7].Gates, summary.GateResult{Kind: summary.GateBench, Verdict: summary.VerdictPass})
	sums[7].Verdict = summary.VerdictFail
	b := SpendBudget(sums, DefaultBuildFDR)
	if len(b.Tests) != 60 {
		t.Fatalf("SpendBudget() has %d tests, want 60", len(b.Tests))
	}
	verdict := func(b Budget, s summary.Summary) string {
		return JudgeBuild([]summary.Summary{s}, nil, b).Rows[0].Verdict
	}
	if got := verdict(b, sums[3]); got != summary.VerdictPass {
		t.Errorf("Verdict(p = 0.004 among 60) = %q, want pass within the budget", got)
	}
	if got := verdict(b, sums[7]); got != RowRegressed {
		t.Errorf("Verdict(p = 1e-9) = %q, want fail", got)
	}
	if got := verdict(b, sums[0]); got != summary.VerdictPass {
		t.Errorf("Verdict(unflagged) = %q", got)
	}
	// Alone, the p = 0.004 regression fails: the budget is per build.
	if got := verdict(SpendBudget(sums[3:4], DefaultBuildFDR), sums[3]); got != RowRegressed {
		t.Errorf("Verdict(p = 0.004 among 3) = %q, want fail", got)
	}
	// An accuracy failure is never released.
	acc := summary.Summary{Recipe: "a", Verdict: summary.VerdictFail, Gates: []summary.GateResult{{Kind: summary.GateAccuracy, Verdict: summary.VerdictFail}}}
	if got := verdict(b, acc); got != summary.VerdictFail {
		t.Errorf("Verdict(accuracy failure) = %q, want fail", got)
	}
}

func TestSpend(t *testing.T) {
	t.Parallel()
	// m = 4, q = 0.05: thresholds 0.0125, 0.025, 0.0375, 0.05. The
	// largest rank under its threshold is 3 (0.03), so ranks 1-3 fail,
	// including 0.02 and 0.03, which alone would pass 0.0125; a test its
	// own gate did not flag never fails.
	tests := []BudgetTest{{P: 0.03, Flagged: true}, {P: 0.5}, {P: 0.001, Flagged: true}, {P: 0.02}}
	b := Spend(tests, 0.05)
	var fails []int
	for i, t := range b.Tests {
		if t.Fails {
			fails = append(fails, i)
		}
	}
	if diff := cmp.Diff(fails, []int{0, 2}); diff != "" || b.Threshold != 0.03 || !b.Failed() {
		t.Errorf("Spend() fails %v, threshold %v (diff -got +want:\n%s)", fails, b.Threshold, diff)
	}
	if b := Spend([]BudgetTest{{P: 0.02, Flagged: true}, {P: 0.5}, {P: 1}}, 0.05); b.Failed() {
		t.Errorf("Spend(0.02 of 3) failed, want none")
	}
}
