package gate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/benchkite/benchkite/workloads/workloadstest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const flexible = "exact_match,flexible-extract"

const seedRecipe = "../../../testdata/workloads/minimax_m3_mi355x.yaml"

var approx = cmpopts.EquateApprox(0, 1e-9)

func accuracyNight(t *testing.T, build int, recipe string, score float64) baseline.Night {
	t.Helper()
	return baseline.Night{BuildNumber: build, Summary: baselinetest.Encode(t, summary.Summary{
		Recipe:  recipe,
		Verdict: summary.VerdictPass,
		Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK,
			Metrics: map[string]float64{flexible: score, "exact_match,strict-match": score - 0.05}}},
	})}
}

func gsm8kSummary(recipe string, score float64) *summary.Summary {
	return &summary.Summary{Recipe: recipe, Accuracy: []summary.TaskResult{{Task: "gsm8k", NumFewshot: 5, Status: summary.StatusOK,
		Metrics: map[string]float64{flexible: score}}}}
}

func TestSeedRecipeBaselineFrom(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, seedRecipe, nil)
	const bound = ">= 0.9250 (minimax_m3-nospec-mi355x #41 0.9400 - 0.015)"
	tests := []struct {
		name  string
		score float64
		want  summary.GateResult
	}{
		{
			name:  "pass within tolerance",
			score: 0.93,
			want: summary.GateResult{Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: flexible, Value: ptr(0.93),
				Bound: bound, BaselineFrom: "minimax_m3-nospec-mi355x", Tolerance: ptr(0.015), Alpha: ptr(0.01), Baseline: ptr(0.94), DeltaPct: ptr(-1.0638297872340436), Verdict: summary.VerdictPass,
				Message: "gsm8k exact_match,flexible-extract = 0.9300 vs minimax_m3-nospec-mi355x #41 0.9400 (Δ -0.0100, tolerance 0.015); judged on the means, not per question: the build's history holds no per-question outcomes of minimax_m3-nospec-mi355x #41 gsm8k"},
		},
		{
			name:  "fail below tolerance",
			score: 0.90,
			want: summary.GateResult{Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: flexible, Value: ptr(0.90),
				Bound: bound, BaselineFrom: "minimax_m3-nospec-mi355x", Tolerance: ptr(0.015), Alpha: ptr(0.01), Baseline: ptr(0.94), DeltaPct: ptr(-4.25531914893617), Verdict: summary.VerdictFail,
				Message: "gsm8k exact_match,flexible-extract = 0.9000 vs minimax_m3-nospec-mi355x #41 0.9400 (Δ -0.0400, tolerance 0.015); judged on the means, not per question: the build's history holds no per-question outcomes of minimax_m3-nospec-mi355x #41 gsm8k"},
		},
		{
			name:  "pass exactly at the tolerance",
			score: 0.925,
			want: summary.GateResult{Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: flexible, Value: ptr(0.925),
				Bound: bound, BaselineFrom: "minimax_m3-nospec-mi355x", Tolerance: ptr(0.015), Alpha: ptr(0.01), Baseline: ptr(0.94), DeltaPct: ptr(-1.5957446808510585), Verdict: summary.VerdictPass,
				Message: "gsm8k exact_match,flexible-extract = 0.9250 vs minimax_m3-nospec-mi355x #41 0.9400 (Δ -0.0150, tolerance 0.015); judged on the means, not per question: the build's history holds no per-question outcomes of minimax_m3-nospec-mi355x #41 gsm8k"},
		},
		{
			name:  "a higher score passes",
			score: 0.97,
			want: summary.GateResult{Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: flexible, Value: ptr(0.97),
				Bound: bound, BaselineFrom: "minimax_m3-nospec-mi355x", Tolerance: ptr(0.015), Alpha: ptr(0.01), Baseline: ptr(0.94), DeltaPct: ptr(3.191489361702131), Verdict: summary.VerdictPass,
				Message: "gsm8k exact_match,flexible-extract = 0.9700 vs minimax_m3-nospec-mi355x #41 0.9400 (Δ +0.0300, tolerance 0.015); judged on the means, not per question: the build's history holds no per-question outcomes of minimax_m3-nospec-mi355x #41 gsm8k"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := &baselinetest.Source{Nights: map[string][]baseline.Night{
				"minimax_m3-nospec-mi355x": {accuracyNight(t, 41, "minimax_m3-nospec-mi355x", 0.94), accuracyNight(t, 40, "minimax_m3-nospec-mi355x", 0.5)},
			}}
			g := Gater{Res: res, History: src.History()}
			got := accuracyOnly(g.Apply(context.Background(), gsm8kSummary(res.Recipe.Name, tt.score)))
			if diff := cmp.Diff(got, []summary.GateResult{tt.want}, approx); diff != "" {
				t.Errorf("Apply() diff (-got +want):\n%s", diff)
			}
			wantCalls := []baselinetest.Call{{Recipe: "minimax_m3-nospec-mi355x", StepKey: "recipe:minimax_m3-nospec-mi355x", N: BaselineFromNights}}
			if diff := cmp.Diff(src.Calls(), wantCalls); diff != "" {
				t.Errorf("baseline lookups diff (-got +want):\n%s", diff)
			}
		})
	}
}

func accuracyRecipe(e ...workloads.Expectation) *workloads.Resolved {
	return &workloads.Resolved{
		Recipe: &workloads.Recipe{Name: "r-mi355x"},
		Tasks:  []workloads.ResolvedTask{{Name: "gsm8k", NumFewshot: 5, Expect: e}},
	}
}

func TestAccuracyGates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		expect workloads.Expectation
		sum    *summary.Summary
		source func(t *testing.T) *baseline.History
		want   []summary.GateResult
	}{
		{
			name:   "min pass",
			expect: workloads.Expectation{Metric: flexible, Min: ptr(0.8)},
			sum:    gsm8kSummary("r-mi355x", 0.85),
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.85), Bound: ">= 0.8",
				Verdict: "pass", Message: "gsm8k exact_match,flexible-extract = 0.8500, must be >= 0.8"}},
		},
		{
			name:   "min fail",
			expect: workloads.Expectation{Metric: flexible, Min: ptr(0.8)},
			sum:    gsm8kSummary("r-mi355x", 0.79),
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.79), Bound: ">= 0.8",
				Verdict: "fail", Message: "gsm8k exact_match,flexible-extract = 0.7900, must be >= 0.8"}},
		},
		{
			name:   "baseline higher score passes",
			expect: workloads.Expectation{Metric: flexible, Baseline: ptr(0.90), Tolerance: 0.02},
			sum:    gsm8kSummary("r-mi355x", 0.95),
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.95),
				Bound: ">= 0.8800 (baseline 0.9000 - 0.02)", Baseline: ptr(0.90), DeltaPct: ptr(5.555555555555552),
				Verdict: "pass", Message: "gsm8k exact_match,flexible-extract = 0.9500 vs baseline 0.9000 (Δ +0.0500, tolerance 0.02)"}},
		},
		{
			name:   "baseline within tolerance passes",
			expect: workloads.Expectation{Metric: flexible, Baseline: ptr(0.90), Tolerance: 0.02},
			sum:    gsm8kSummary("r-mi355x", 0.89),
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.89),
				Bound: ">= 0.8800 (baseline 0.9000 - 0.02)", Baseline: ptr(0.90), DeltaPct: ptr(-1.1111111111111072),
				Verdict: "pass", Message: "gsm8k exact_match,flexible-extract = 0.8900 vs baseline 0.9000 (Δ -0.0100, tolerance 0.02)"}},
		},
		{
			name:   "baseline beyond tolerance fails",
			expect: workloads.Expectation{Metric: flexible, Baseline: ptr(0.90), Tolerance: 0.02},
			sum:    gsm8kSummary("r-mi355x", 0.87),
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.87),
				Bound: ">= 0.8800 (baseline 0.9000 - 0.02)", Baseline: ptr(0.90), DeltaPct: ptr(-3.3333333333333366),
				Verdict: "fail", Message: "gsm8k exact_match,flexible-extract = 0.8700 vs baseline 0.9000 (Δ -0.0300, tolerance 0.02)"}},
		},
		{
			name:   "task failed: an error, not passed",
			expect: workloads.Expectation{Metric: flexible, Min: ptr(0.8)},
			sum: &summary.Summary{Recipe: "r-mi355x", Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusFailed,
				Error: "lm_eval exited 1", Metrics: map[string]float64{flexible: 0.9}}}},
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Bound: ">= 0.8",
				Verdict: "error", Message: "gsm8k exact_match,flexible-extract: not measured: the task is failed: lm_eval exited 1"}},
		},
		{
			name:   "metric missing: an error naming file and key",
			expect: workloads.Expectation{Metric: "acc", Min: ptr(0.8)},
			sum: &summary.Summary{Recipe: "r-mi355x", Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK,
				File: "gsm8k/m/results_x.json", Metrics: map[string]float64{flexible: 0.9}}}},
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: "acc", Bound: ">= 0.8",
				Verdict: "error", Message: `gsm8k acc: not measured: gsm8k/m/results_x.json has no key "acc" (it has exact_match,flexible-extract)`}},
		},
		{
			name:   "lm_eval not planned (bench only): skipped",
			expect: workloads.Expectation{Metric: flexible, Min: ptr(0.8)},
			sum:    &summary.Summary{Recipe: "r-mi355x", Phases: []summary.Phase{{Name: summary.PhaseLMEval, Status: summary.StatusSkipped, Error: "bench only"}}},
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Bound: ">= 0.8",
				Verdict: "skipped", Message: "gsm8k exact_match,flexible-extract: not planned (bench only)"}},
		},
		{
			name:   "lm_eval planned but not run: an error",
			expect: workloads.Expectation{Metric: flexible, Min: ptr(0.8)},
			sum:    &summary.Summary{Recipe: "r-mi355x", Phases: []summary.Phase{{Name: summary.PhaseLMEval, Status: summary.StatusNotRun, Error: "server exited"}}},
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Bound: ">= 0.8",
				Verdict: "error", Message: "gsm8k exact_match,flexible-extract: not measured: the task did not run"}},
		},
		{
			name:   "a zero score fails the floor whatever the baseline",
			expect: workloads.Expectation{Metric: flexible, BaselineFrom: "other-mi355x", Tolerance: 0.01},
			sum:    gsm8kSummary("r-mi355x", 0),
			want: []summary.GateResult{
				{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.0), Bound: "> 0",
					Verdict: "fail", Message: "gsm8k exact_match,flexible-extract = 0.0000, at or below the floor 0: fails whatever the baseline says"},
				{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.0), Bound: "within 0.01 of other-mi355x", BaselineFrom: "other-mi355x", Tolerance: ptr(0.01),
					Verdict: "no-baseline", Message: "gsm8k exact_match,flexible-extract = 0.0000: no baseline from other-mi355x (no baseline: no baseline source)"},
			},
		},
		{
			name:   "baseline_from with no night: no-baseline",
			expect: workloads.Expectation{Metric: flexible, BaselineFrom: "other-mi355x", Tolerance: 0.01},
			sum:    gsm8kSummary("r-mi355x", 0.9),
			source: func(*testing.T) *baseline.History {
				return (&baselinetest.Source{}).History()
			},
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.9), Bound: "within 0.01 of other-mi355x", BaselineFrom: "other-mi355x", Tolerance: ptr(0.01),
				Verdict: "no-baseline", Message: "gsm8k exact_match,flexible-extract = 0.9000: no baseline from other-mi355x (no baseline: no passing night of other-mi355x)"}},
		},
		{
			name:   "baseline_from night without the task: no-baseline",
			expect: workloads.Expectation{Metric: flexible, BaselineFrom: "other-mi355x", Tolerance: 0.01},
			sum:    gsm8kSummary("r-mi355x", 0.9),
			source: func(t *testing.T) *baseline.History {
				return (&baselinetest.Source{Nights: map[string][]baseline.Night{"other-mi355x": {
					{BuildNumber: 7, Summary: baselinetest.Encode(t, summary.Summary{Recipe: "other-mi355x"})},
				}}}).History()
			},
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.9), Bound: "within 0.01 of other-mi355x", BaselineFrom: "other-mi355x", Tolerance: ptr(0.01),
				Verdict: "no-baseline", Message: "gsm8k exact_match,flexible-extract = 0.9000: no baseline from other-mi355x (no baseline: other-mi355x #7 has no gsm8k exact_match,flexible-extract)"}},
		},
		{
			name:   "baseline_from night with an unreadable summary: no-baseline",
			expect: workloads.Expectation{Metric: flexible, BaselineFrom: "other-mi355x", Tolerance: 0.01},
			sum:    gsm8kSummary("r-mi355x", 0.9),
			source: func(t *testing.T) *baseline.History {
				return (&baselinetest.Source{Nights: map[string][]baseline.Night{"other-mi355x": {
					{BuildNumber: 7, Summary: []byte(`{"schema_version": 99}`)},
				}}}).History()
			},
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.9), Bound: "within 0.01 of other-mi355x", BaselineFrom: "other-mi355x", Tolerance: ptr(0.01),
				Verdict: "no-baseline", Message: "gsm8k exact_match,flexible-extract = 0.9000: no baseline from other-mi355x (no baseline: build 7: read summary: unsupported summary schema_version: file has version 99, this build reads up to 1; update benchkite)"}},
		},
		{
			name:   "baseline_from without a source: no-baseline",
			expect: workloads.Expectation{Metric: flexible, BaselineFrom: "other-mi355x", Tolerance: 0.01},
			sum:    gsm8kSummary("r-mi355x", 0.9),
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.9), Bound: "within 0.01 of other-mi355x", BaselineFrom: "other-mi355x", Tolerance: ptr(0.01),
				Verdict: "no-baseline", Message: "gsm8k exact_match,flexible-extract = 0.9000: no baseline from other-mi355x (no baseline: no baseline source)"}},
		},
		{
			name:   "baseline_from when the token is missing: no-baseline",
			expect: workloads.Expectation{Metric: flexible, BaselineFrom: "other-mi355x", Tolerance: 0.01},
			sum:    gsm8kSummary("r-mi355x", 0.9),
			source: func(*testing.T) *baseline.History {
				return baseline.NewHistory(func(context.Context) (baseline.Source, error) {
					return nil, fmt.Errorf("%w: BUILDKITE_API_TOKEN is not set", bkapi.ErrNoToken)
				})
			},
			want: []summary.GateResult{{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.9), Bound: "within 0.01 of other-mi355x", BaselineFrom: "other-mi355x", Tolerance: ptr(0.01),
				Verdict: "no-baseline", Message: "gsm8k exact_match,flexible-extract = 0.9000: no baseline from other-mi355x (no baseline: no Buildkite API token: BUILDKITE_API_TOKEN is not set)"}},
		},
		{
			name:   "min and baseline: one gate each",
			expect: workloads.Expectation{Metric: flexible, Min: ptr(0.95), Baseline: ptr(0.9), Tolerance: 0.01},
			sum:    gsm8kSummary("r-mi355x", 0.92),
			want: []summary.GateResult{
				{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.92), Bound: ">= 0.95",
					Verdict: "fail", Message: "gsm8k exact_match,flexible-extract = 0.9200, must be >= 0.95"},
				{Kind: "accuracy", Subject: "gsm8k", Metric: flexible, Value: ptr(0.92), Bound: ">= 0.8900 (baseline 0.9000 - 0.01)",
					Baseline: ptr(0.9), DeltaPct: ptr(2.2222222222222245), Verdict: "pass",
					Message: "gsm8k exact_match,flexible-extract = 0.9200 vs baseline 0.9000 (Δ +0.0200, tolerance 0.01)"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := Gater{Res: accuracyRecipe(tt.expect), History: baseline.NewHistory(nil)}
			if tt.source != nil {
				g.History = tt.source(t)
			}
			got := g.Apply(context.Background(), tt.sum)
			if diff := cmp.Diff(got, tt.want, approx); diff != "" {
				t.Errorf("Apply() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestBenchAssertions(t *testing.T) {
	t.Parallel()
	res := withRuns(&workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-h200", Bench: &workloads.Bench{Configs: []workloads.BenchConfig{{
		Name: "8k",
		Assertions: []workloads.Assertion{
			{Metric: "output_throughput", Min: ptr(1000.0)},
			{Metric: "median_ttft_ms", Max: ptr(500.0)},
			{Metric: "completed", Min: ptr(512.0), Max: ptr(512.0)},
		},
	}}}}})
	run := func(status string, m map[string]float64) *summary.Summary {
		return &summary.Summary{Recipe: "r-h200", Bench: []summary.BenchRun{
			{Name: "8k", Config: "8k", Status: status, Metrics: m},
			// A run of a config the recipe no longer has is not judged.
			{Name: "old", Config: "old", Status: summary.StatusOK, Metrics: m},
		}}
	}
	tests := []struct {
		name string
		sum  *summary.Summary
		want []summary.GateResult
	}{
		{
			name: "all within bounds",
			sum:  run(summary.StatusOK, map[string]float64{"output_throughput": 1000, "median_ttft_ms": 500, "completed": 512}),
			want: []summary.GateResult{
				{Kind: "bench", Subject: "8k", Metric: "output_throughput", Value: ptr(1000.0), Bound: ">= 1000", Verdict: "pass", Message: "8k output_throughput = 1000, must be >= 1000"},
				{Kind: "bench", Subject: "8k", Metric: "median_ttft_ms", Value: ptr(500.0), Bound: "<= 500", Verdict: "pass", Message: "8k median_ttft_ms = 500, must be <= 500"},
				{Kind: "bench", Subject: "8k", Metric: "completed", Value: ptr(512.0), Bound: "in [512, 512]", Verdict: "pass", Message: "8k completed = 512, must be in [512, 512]"},
			},
		},
		{
			name: "below min, above max, outside range",
			sum:  run(summary.StatusOK, map[string]float64{"output_throughput": 999.5, "median_ttft_ms": 501, "completed": 500}),
			want: []summary.GateResult{
				{Kind: "bench", Subject: "8k", Metric: "output_throughput", Value: ptr(999.5), Bound: ">= 1000", Verdict: "fail", Message: "8k output_throughput = 999.5, must be >= 1000"},
				{Kind: "bench", Subject: "8k", Metric: "median_ttft_ms", Value: ptr(501.0), Bound: "<= 500", Verdict: "fail", Message: "8k median_ttft_ms = 501, must be <= 500"},
				{Kind: "bench", Subject: "8k", Metric: "completed", Value: ptr(500.0), Bound: "in [512, 512]", Verdict: "fail", Message: "8k completed = 500, must be in [512, 512]"},
			},
		},
		{
			name: "failed run: an error, not skipped",
			sum: &summary.Summary{Recipe: "r-h200", Bench: []summary.BenchRun{
				{Name: "8k", Config: "8k", Status: summary.StatusFailed, Error: "repetition 1: exit status 1", Metrics: map[string]float64{"output_throughput": 5000}},
			}},
			want: []summary.GateResult{
				{Kind: "bench", Subject: "8k", Metric: "output_throughput", Bound: ">= 1000", Verdict: "error", Message: "8k output_throughput: not measured: the run is failed: repetition 1: exit status 1"},
				{Kind: "bench", Subject: "8k", Metric: "median_ttft_ms", Bound: "<= 500", Verdict: "error", Message: "8k median_ttft_ms: not measured: the run is failed: repetition 1: exit status 1"},
				{Kind: "bench", Subject: "8k", Metric: "completed", Bound: "in [512, 512]", Verdict: "error", Message: "8k completed: not measured: the run is failed: repetition 1: exit status 1"},
			},
		},
		{
			name: "a key the bench does not write: an error naming file and key",
			sum: &summary.Summary{Recipe: "r-h200", Bench: []summary.BenchRun{
				{Name: "8k", Config: "8k", Status: summary.StatusOK, File: "bench-8k.json", Metrics: map[string]float64{"output_throughput": 5000, "median_ttft_ms": 1, "completed": 512}},
			}},
			want: []summary.GateResult{
				{Kind: "bench", Subject: "8k", Metric: "output_throughput", Value: ptr(5000.0), Bound: ">= 1000", Verdict: "pass", Message: "8k output_throughput = 5000, must be >= 1000"},
				{Kind: "bench", Subject: "8k", Metric: "median_ttft_ms", Value: ptr(1.0), Bound: "<= 500", Verdict: "pass", Message: "8k median_ttft_ms = 1, must be <= 500"},
				{Kind: "bench", Subject: "8k", Metric: "completed", Value: ptr(512.0), Bound: "in [512, 512]", Verdict: "pass", Message: "8k completed = 512, must be in [512, 512]"},
			},
		},
		{
			name: "the planned run is missing: an error",
			sum:  &summary.Summary{Recipe: "r-h200"},
			want: []summary.GateResult{
				{Kind: "bench", Subject: "8k", Metric: "output_throughput", Bound: ">= 1000", Verdict: "error", Message: "8k output_throughput: not measured: the run did not happen"},
				{Kind: "bench", Subject: "8k", Metric: "median_ttft_ms", Bound: "<= 500", Verdict: "error", Message: "8k median_ttft_ms: not measured: the run did not happen"},
				{Kind: "bench", Subject: "8k", Metric: "completed", Bound: "in [512, 512]", Verdict: "error", Message: "8k completed: not measured: the run did not happen"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := Gater{Res: res, History: baseline.NewHistory(nil)}
			got := g.Apply(context.Background(), tt.sum)
			if diff := cmp.Diff(got, tt.want, approx); diff != "" {
				t.Errorf("Apply() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func benchNight(t *testing.T, build int, run string, m map[string]float64) baseline.Night {
	t.Helper()
	status := summary.StatusOK
	if m == nil {
		status = summary.StatusFailed
	}
	return baseline.Night{BuildNumber: build, Summary: baselinetest.Encode(t, summary.Summary{
		Recipe: "r-h200", Verdict: summary.VerdictPass,
		Bench: []summary.BenchRun{{Name: run, Config: "8k", Status: status, Metrics: m}},
	})}
}

func tputTPOT(tput, tpot float64) map[string]float64 {
	return map[string]float64{"output_throughput": tput, "median_tpot_ms": tpot}
}

func TestBaselineLookupsAreShared(t *testing.T) {
	t.Parallel()
	policy := &workloads.Regression{Nights: 3, MaxMissing: 1, Metrics: []workloads.RegressionMetric{{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: 5}}}
	res := &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-h200", Bench: &workloads.Bench{
		Regression: policy, Configs: []workloads.BenchConfig{{Name: "sweep"}},
	}}, BenchRuns: []workloads.BenchRun{{Name: "sweep-conc-1", Config: "sweep"}, {Name: "sweep-conc-8", Config: "sweep"}}}
	sum := &summary.Summary{Recipe: "r-h200", Bench: []summary.BenchRun{
		{Name: "sweep-conc-1", Config: "sweep", Status: summary.StatusOK, Metrics: tputTPOT(10, 1)},
		{Name: "sweep-conc-8", Config: "sweep", Status: summary.StatusOK, Metrics: tputTPOT(80, 1)},
	}}
	for _, err := range []error{nil, fmt.Errorf("%w: %w", baseline.ErrNoBaseline, bkapi.ErrUnavailable)} {
		src := &baselinetest.Source{Err: err, Nights: map[string][]baseline.Night{"r-h200": {benchNight(t, 9, "sweep-conc-1", tputTPOT(10, 1))}}}
		built := 0
		g := Gater{Res: res, History: baseline.NewHistory(func(context.Context) (baseline.Source, error) { built++; return src, nil })}
		g.Apply(context.Background(), sum)
		if want := []baselinetest.Call{{Recipe: "r-h200", StepKey: "recipe:r-h200", N: 3}}; !cmp.Equal(src.Calls(), want) || built != 1 {
			t.Errorf("with Last error %v: source built %d times, lookups %v; want once and %v", err, built, src.Calls(), want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// withRuns plans one run per config, named as the config, as
// workloads.Resolve does for a config with one concurrency.
func withRuns(res *workloads.Resolved) *workloads.Resolved {
	for _, c := range res.Recipe.Bench.Configs {
		res.BenchRuns = append(res.BenchRuns, workloads.BenchRun{Name: c.Name, Config: c.Name})
	}
	return res
}

// accuracyOnly keeps the accuracy gates: the bench gates of a summary
// without bench runs are errors, checked elsewhere.
func accuracyOnly(gs []summary.GateResult) []summary.GateResult {
	var out []summary.GateResult
	for _, g := range gs {
		if g.Kind == summary.GateAccuracy {
			out = append(out, g)
		}
	}
	return out
}

func TestBaselineFromPrefersTonightsImage(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, seedRecipe, nil)
	digest := func(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }
	night := func(build int, score float64, model, image string) baseline.Night {
		return baseline.Night{BuildNumber: build, Summary: baselinetest.Encode(t, summary.Summary{
			Recipe: "minimax_m3-nospec-mi355x", Model: model, ImageDigest: image, Verdict: summary.VerdictPass,
			Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK, Metrics: map[string]float64{flexible: score}}},
		})}
	}
	failed := func(n baseline.Night) baseline.Night {
		n.Failed = true
		return n
	}
	model := res.Recipe.VLLM.Model
	tests := []struct {
		name    string
		nights  []baseline.Night
		tonight string
		want    string
	}{
		{"the newest night on tonight's image and model", []baseline.Night{
			night(43, 0.5, model, digest('b')), night(42, 0.6, "other/model", digest('a')), night(41, 0.94, model, digest('a'))},
			digest('a'), "vs minimax_m3-nospec-mi355x #41 0.9400 (Δ -0.0100, tolerance 0.015)"},
		{"none on tonight's image: the newest, with a note", []baseline.Night{
			night(43, 0.94, model, digest('b')), night(42, 0.6, model, "")},
			digest('a'), "vs minimax_m3-nospec-mi355x #43 0.9400 (Δ -0.0100, tolerance 0.015); the images differ (tonight " + digest('a') + ", #43 " + digest('b') + "): a change may be the image's"},
		{"tonight unpinned: the newest", []baseline.Night{night(43, 0.94, model, digest('b'))},
			"", "vs minimax_m3-nospec-mi355x #43 0.9400"},
		{"a night whose job failed is passed over", []baseline.Night{
			failed(night(44, 0.5, model, digest('a'))), night(43, 0.94, model, digest('a'))},
			digest('a'), "vs minimax_m3-nospec-mi355x #43 0.9400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := &baselinetest.Source{Nights: map[string][]baseline.Night{"minimax_m3-nospec-mi355x": tt.nights}}
			sum := gsm8kSummary(res.Recipe.Name, 0.93)
			sum.Model, sum.ImageDigest = model, tt.tonight
			got := accuracyOnly(Gater{Res: res, History: src.History()}.Apply(context.Background(), sum))
			if len(got) != 1 || got[0].Verdict != summary.VerdictPass || !strings.Contains(got[0].Message, tt.want) {
				t.Errorf("Apply() = %+v, want one pass whose message contains %q", got, tt.want)
			}
		})
	}
}
