package gate

import (
	"context"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// verdicts lists each accuracy gate as "subject metric verdict".
func verdicts(gs []summary.GateResult) []string {
	var out []string
	for _, g := range gs {
		if g.Kind == summary.GateAccuracy {
			out = append(out, g.Subject+" "+g.Metric+" "+g.Bound+" "+g.Verdict)
		}
	}
	return out
}

func apply(res *workloads.Resolved, sum *summary.Summary) []summary.GateResult {
	return Gater{Res: res, History: baseline.NewHistory(nil)}.Apply(context.Background(), sum)
}

func acc(task, entry string, metric string, v float64) summary.TaskResult {
	return summary.TaskResult{Task: task, Entry: entry, Status: summary.StatusOK, Metrics: map[string]float64{metric: v}}
}

// Two entries of one task are each judged on their own run: the first's
// min: 0.9 sees its own 0.0, not the second entry's 1.0.
func TestTaskEntriesJudgedOnTheirOwnRun(t *testing.T) {
	t.Parallel()
	res := &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r"}, Tasks: []workloads.ResolvedTask{
		{Name: "gsm8k", Expect: []workloads.Expectation{{Metric: flexible, Min: ptr(0.9)}}},
		{Name: "gsm8k"},
	}}
	sum := &summary.Summary{Accuracy: []summary.TaskResult{acc("gsm8k", "gsm8k", flexible, 0), acc("gsm8k", "gsm8k.2", flexible, 1)}}
	got := verdicts(apply(res, sum))
	want := []string{"gsm8k " + flexible + " >= 0.9 fail"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gates (-want +got):\n%s", diff)
	}
	// Swapped scores: the gated entry passes, and the other's 0 fails
	// the floor though no gate names it.
	sum = &summary.Summary{Accuracy: []summary.TaskResult{acc("gsm8k", "gsm8k", flexible, 1), acc("gsm8k", "gsm8k.2", flexible, 0)}}
	got = verdicts(apply(res, sum))
	want = []string{"gsm8k " + flexible + " >= 0.9 pass", "gsm8k " + flexible + " > 0 fail"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("gates (-want +got):\n%s", diff)
	}
}

// A gate on a BFCL category judges the category's own run, not the leaf
// of a group run listed beside it, in either order.
func TestBFCLCategoryJudgedOnItsOwnRun(t *testing.T) {
	t.Parallel()
	for _, cats := range [][]string{{"multi_turn", "multi_turn_base"}, {"multi_turn_base", "multi_turn"}} {
		res := &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r"}, BFCL: &workloads.BFCL{TestCategories: cats,
			Gates: []workloads.BFCLGate{{Category: "multi_turn_base", Expect: workloads.Expectation{Min: ptr(0.9)}}}}}
		own := acc("bfcl_multi_turn_base", "bfcl/multi_turn_base", "acc", 0.5)
		leaf := acc("bfcl_multi_turn_base", "bfcl/multi_turn", "acc", 1)
		group := acc("bfcl_multi_turn", "bfcl/multi_turn", "acc", 1)
		sum := &summary.Summary{}
		for _, c := range cats {
			if c == "multi_turn" {
				sum.Accuracy = append(sum.Accuracy, group, leaf)
			} else {
				sum.Accuracy = append(sum.Accuracy, own)
			}
		}
		got := verdicts(apply(res, sum))
		if diff := cmp.Diff([]string{"bfcl_multi_turn_base acc >= 0.9 fail"}, got); diff != "" {
			t.Errorf("%v: gates (-want +got):\n%s", cats, diff)
		}
	}
	// Only the group listed: a gate on its leaf judges the group's run.
	res := &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r"}, BFCL: &workloads.BFCL{TestCategories: []string{"multi_turn"},
		Gates: []workloads.BFCLGate{{Category: "multi_turn_base", Expect: workloads.Expectation{Min: ptr(0.9)}}}}}
	sum := &summary.Summary{Accuracy: []summary.TaskResult{acc("bfcl_multi_turn", "bfcl/multi_turn", "acc", 0.95), acc("bfcl_multi_turn_base", "bfcl/multi_turn", "acc", 0.95)}}
	if diff := cmp.Diff([]string{"bfcl_multi_turn_base acc >= 0.9 pass"}, verdicts(apply(res, sum))); diff != "" {
		t.Errorf("leaf of a group: gates (-want +got):\n%s", diff)
	}
}

// Every accuracy and BFCL score at or below 0 fails, gated or not, and
// whatever min says.
func TestFloorsEverywhere(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  *workloads.Resolved
		sum  *summary.Summary
		want []string
	}{
		{
			name: "task without expect",
			res:  &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r"}, Tasks: []workloads.ResolvedTask{{Name: "gsm8k"}}},
			sum:  &summary.Summary{Accuracy: []summary.TaskResult{acc("gsm8k", "gsm8k", flexible, 0)}},
			want: []string{"gsm8k " + flexible + " > 0 fail"},
		},
		{
			name: "ungated metric of a gated task",
			res: &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r"}, Tasks: []workloads.ResolvedTask{{Name: "gsm8k",
				Expect: []workloads.Expectation{{Metric: flexible, Min: ptr(0.5)}}}}},
			sum: &summary.Summary{Accuracy: []summary.TaskResult{{Task: "gsm8k", Entry: "gsm8k", Status: summary.StatusOK,
				Metrics: map[string]float64{flexible: 0.9, "exact_match,strict-match": -0.0}}}},
			want: []string{"gsm8k " + flexible + " >= 0.5 pass", "gsm8k exact_match,strict-match > 0 fail"},
		},
		{
			name: "min 0 does not excuse 0",
			res: &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r"}, Tasks: []workloads.ResolvedTask{{Name: "gsm8k",
				Expect: []workloads.Expectation{{Metric: flexible, Min: ptr(0.0)}}}}},
			sum:  &summary.Summary{Accuracy: []summary.TaskResult{acc("gsm8k", "gsm8k", flexible, 0)}},
			want: []string{"gsm8k " + flexible + " > 0 fail", "gsm8k " + flexible + " >= 0 pass"},
		},
		{
			name: "bfcl category and leaf without a gate",
			res:  &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r"}, BFCL: &workloads.BFCL{TestCategories: []string{"multi_turn"}}},
			sum: &summary.Summary{Accuracy: []summary.TaskResult{acc("bfcl_multi_turn", "bfcl/multi_turn", "acc", 0.25),
				acc("bfcl_multi_turn_base", "bfcl/multi_turn", "acc", 0)}},
			want: []string{"bfcl_multi_turn_base acc > 0 fail"},
		},
		{
			name: "a failed task is not floored (its error says why)",
			res:  &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r"}, Tasks: []workloads.ResolvedTask{{Name: "gsm8k"}}},
			sum:  &summary.Summary{Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusFailed, Metrics: map[string]float64{flexible: 0}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, verdicts(apply(tt.res, tt.sum))); diff != "" {
				t.Errorf("gates (-want +got):\n%s", diff)
			}
		})
	}
}
