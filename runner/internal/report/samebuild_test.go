package report

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

const flex = "exact_match,flexible-extract"

// seedPair is the seed (EAGLE3) and no-spec recipes of one build: the
// seed's own step judged against the no-spec recipe's last night
// (0.90), and tonight the no-spec recipe scored nospec.
func seedPair(seed, nospec float64) []summary.Summary {
	tol, last := 0.015, 0.90
	return []summary.Summary{
		{Recipe: "minimax_m3-mi355x", Verdict: summary.VerdictPass,
			Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK, Metrics: map[string]float64{flex: seed}}},
			Gates: []summary.GateResult{{Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: flex, Value: &seed, Baseline: &last,
				Verdict: summary.VerdictPass, BaselineFrom: "minimax_m3-nospec-mi355x", Tolerance: &tol}}},
		{Recipe: "minimax_m3-nospec-mi355x", Verdict: summary.VerdictPass,
			Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK, Metrics: map[string]float64{flex: nospec}}},
			Gates:    []summary.GateResult{}},
	}
}

func TestSameBuildComparisons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sums []summary.Summary
		want []sameBuild
	}{
		{name: "within tolerance of tonight's no-spec", sums: seedPair(0.91, 0.92),
			want: []sameBuild{{Recipe: "minimax_m3-mi355x", From: "minimax_m3-nospec-mi355x", Task: "gsm8k", Metric: flex, Value: 0.91, Other: 0.92, Tolerance: 0.015, Verdict: "pass"}}},
		// The seed's own step passed against last night's 0.90; tonight's
		// no-spec run scored 0.95, so EAGLE3 lost accuracy tonight.
		{name: "passed its step, fails against tonight", sums: seedPair(0.91, 0.95),
			want: []sameBuild{{Recipe: "minimax_m3-mi355x", From: "minimax_m3-nospec-mi355x", Task: "gsm8k", Metric: flex, Value: 0.91, Other: 0.95, Tolerance: 0.015, Verdict: "fail"}}},
		{name: "the other recipe did not run", sums: seedPair(0.91, 0.95)[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := sameBuildComparisons(tt.sums, "")
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("sameBuildComparisons() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestReportShowsSameBuildFailure(t *testing.T) {
	t.Parallel()
	sums := seedPair(0.91, 0.95)
	body := renderSums(sums, sameBuildComparisons(sums, ""), nil, nil, "")
	for _, want := range []string{"#### Same-build comparisons", "| ❌ fail | `minimax_m3-mi355x` | gsm8k |", "| 0.9100 | `minimax_m3-nospec-mi355x` | 0.9500 | -0.0400 | 0.015 |"} {
		if !strings.Contains(body, want) {
			t.Errorf("report lacks %q:\n%s", want, body)
		}
	}
	if got := styleOf(sums, sameBuildComparisons(sums, "")); got != "error" {
		t.Errorf("styleOf() = %q, want error", got)
	}
}
