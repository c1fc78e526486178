package gate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// openRegression is the nightly that finds a regression begun four nights
// ago (10 % slower) and still open, judged by the real gate.
func openRegression(t *testing.T, floor float64) summary.GateResult {
	t.Helper()
	tput, tpot := flat(30, 100, 20)
	for i := 26; i < 30; i++ {
		tput[i] *= 0.9
	}
	policy := &workloads.Regression{Nights: 30, MaxMissing: 25, Metrics: []workloads.RegressionMetric{{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: floor}}}
	src := &baselinetest.Source{Nights: map[string][]baseline.Night{"r-h200": seriesNights(t, tput, tpot)}}
	g := Gater{Res: withRuns(&workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-h200", Bench: &workloads.Bench{
		Regression: policy, Configs: []workloads.BenchConfig{{Name: "8k"}}}}}), History: src.History()}
	sum := &summary.Summary{Recipe: "r-h200", VLLMCommit: "def4567", Buildkite: &summary.BuildkiteInfo{BuildNumber: "101"},
		Bench: []summary.BenchRun{{Name: "8k", Config: "8k", Status: summary.StatusOK, Metrics: tputTPOT(89.8, 20)}}}
	for _, gr := range g.Apply(context.Background(), sum) {
		if gr.Kind == summary.GateRegression && gr.Metric == "output_throughput" {
			if gr.Verdict != summary.VerdictFail || gr.ChangePoint == nil || !gr.ChangePoint.Found || gr.ChangePoint.GoodRegime == nil {
				t.Fatalf("the nightly did not find the open regression with its good regime: %+v", gr)
			}
			return gr
		}
	}
	t.Fatal("no regression gate on output_throughput")
	return summary.GateResult{}
}

// A bisect build is judged by the detector against the nights up to the
// last good one, with the nightly's floor and direction: a run at the
// good level is good, one at the regressed level bad, one 3 % down
// (beyond the noise, within the floor) good, as the nightly would say.
func TestJudgeProbeAsTheNightlyJudged(t *testing.T) {
	t.Parallel()
	gr := openRegression(t, 5)
	r := *gr.ChangePoint.GoodRegime
	if len(r.Nights) != 26 || !r.HigherIsBetter || r.FloorPct != 5 {
		t.Fatalf("good regime = %d nights, higher %v, floor %g; want the 26 nights before the drop, higher is better, 5%%", len(r.Nights), r.HigherIsBetter, r.FloorPct)
	}
	probe := func(status string, v float64, reps ...float64) summary.Summary {
		run := summary.BenchRun{Name: "8k", Config: "8k", Status: status, Metrics: tputTPOT(v, 20)}
		if len(reps) > 0 {
			run.RepetitionValues = map[string][]float64{"output_throughput": reps}
		}
		return summary.Summary{Recipe: "r-h200", Verdict: summary.VerdictPass, VLLMCommit: "0123456789ab", Bench: []summary.BenchRun{run}}
	}
	tests := []struct {
		name    string
		sum     summary.Summary
		bad     bool
		whyHas  string
		errHas  string
		commit  string
		mutated func(*summary.Summary)
	}{
		{name: "the good level", sum: probe(summary.StatusOK, 100.3), whyHas: "not flagged"},
		{name: "the regressed level", sum: probe(summary.StatusOK, 90.1), bad: true, whyHas: "flagged (single-night"},
		{name: "beyond the noise, within the floor", sum: probe(summary.StatusOK, 97), whyHas: "below the 5% floor"},
		{name: "agreeing repetitions, regressed", sum: probe(summary.StatusOK, 90, 89.8, 90, 90.3), bad: true, whyHas: "flagged"},
		{name: "the run failed", sum: probe(summary.StatusFailed, 0), errHas: "8k output_throughput not measured: the run is failed"},
		{name: "the build could not finish", sum: probe(summary.StatusOK, 90), errHas: "the run could not finish (vllm: gpu-oom): ready failed",
			mutated: func(s *summary.Summary) {
				s.Verdict, s.Problems = summary.VerdictError, []string{"ready failed: torch.OutOfMemoryError"}
				s.Failure = &summary.Failure{Class: "vllm", Signature: "gpu-oom"}
			}},
		{name: "another commit measured", sum: probe(summary.StatusOK, 90), commit: "fedcba987654", errHas: "measured vLLM 0123456789ab, not fedcba987654"},
		{name: "an attached server", sum: probe(summary.StatusOK, 90), errHas: "a server it did not start",
			mutated: func(s *summary.Summary) { s.Attached = "http://127.0.0.1:8000" }},
		{name: "unverified beyond its own regression gate", sum: probe(summary.StatusOK, 90), errHas: "unverified: no acceptance",
			mutated: func(s *summary.Summary) {
				s.Verdict = summary.VerdictUnverified
				s.Gates = []summary.GateResult{{Kind: summary.GateSpecDecode, Verdict: summary.VerdictUnverified, Message: "no acceptance"}}
			}},
		{name: "unverified only by its own nights", sum: probe(summary.StatusOK, 90), bad: true, whyHas: "flagged",
			mutated: func(s *summary.Summary) {
				s.Verdict = summary.VerdictUnverified
				s.Gates = []summary.GateResult{{Kind: summary.GateRegression, Verdict: summary.VerdictNoBaseline, Message: "no baseline"}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.mutated != nil {
				tt.mutated(&tt.sum)
			}
			commit := "0123456789ab"
			if tt.commit != "" {
				commit = tt.commit
			}
			got, err := JudgeProbe(r, tt.sum, commit, "8k", "output_throughput")
			if tt.errHas != "" {
				if !errors.Is(err, ErrInconclusive) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("JudgeProbe() = %+v, %v; want inconclusive, %q", got, err, tt.errHas)
				}
				return
			}
			if err != nil || got.Bad != tt.bad || !strings.Contains(got.Why, tt.whyHas) {
				t.Errorf("JudgeProbe() = %+v, %v; want bad %v, why with %q", got, err, tt.bad, tt.whyHas)
			}
		})
	}
}

// The floor is the nightly's: with a 15 % floor, the same 10 % drop the
// regression showed is not bad, as the nightly would not have failed it.
func TestJudgeProbeKeepsTheFloor(t *testing.T) {
	t.Parallel()
	r := *openRegression(t, 5).ChangePoint.GoodRegime
	r.FloorPct = 15
	got, err := JudgeProbe(r, summary.Summary{Verdict: summary.VerdictPass, VLLMCommit: "abc1234",
		Bench: []summary.BenchRun{{Name: "8k", Status: summary.StatusOK, Metrics: tputTPOT(90, 20)}}}, "abc1234", "8k", "output_throughput")
	if err != nil || got.Bad || !strings.Contains(got.Why, "below the 15% floor") {
		t.Errorf("JudgeProbe() = %+v, %v; want good, below the 15%% floor", got, err)
	}
	if err := CheckRegime(r); err != nil {
		t.Errorf("CheckRegime(26 nights) = %v", err)
	}
	r.Nights = r.Nights[:3]
	if err := CheckRegime(r); !errors.Is(err, ErrInconclusive) || !strings.Contains(err.Error(), "first nights: no regression check yet (3 past nights, 5 needed)") {
		t.Errorf("CheckRegime(3 nights) = %v, want the detector's reason", err)
	}
	if _, err := JudgeProbe(r, summary.Summary{Verdict: summary.VerdictPass, VLLMCommit: "abc1234",
		Bench: []summary.BenchRun{{Name: "8k", Status: summary.StatusOK, Metrics: tputTPOT(90, 20)}}}, "abc1234", "8k", "output_throughput"); !errors.Is(err, ErrInconclusive) {
		t.Errorf("JudgeProbe() on 3 good nights = %v, want inconclusive", err)
	}
}
