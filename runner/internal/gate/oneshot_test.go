package gate

import (
	"context"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// A clean drop far beyond the noise waits for the next night on a
// nightly build, where a slow machine could explain it; a pull
// request's build has no next night, so it is judged at once.
func TestCleanDropOnABuildWithNoNextNight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		pullRequest string
		verdict     string
		unconfirmed bool
	}{
		{name: "nightly", pullRequest: "false", verdict: summary.VerdictPass, unconfirmed: true},
		{name: "pull request", pullRequest: "42", verdict: summary.VerdictFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tput, tpot := flat(30, 100, 20)
			policy := &workloads.Regression{Nights: 30, MaxMissing: 25, Metrics: []workloads.RegressionMetric{{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: 5}}}
			src := &baselinetest.Source{Nights: map[string][]baseline.Night{"r-h200": seriesNights(t, tput, tpot)}}
			g := Gater{Res: withRuns(&workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-h200", Bench: &workloads.Bench{Configs: []workloads.BenchConfig{{Name: "8k"}}, Regression: policy}}}), History: src.History()}
			sum := &summary.Summary{Recipe: "r-h200", Buildkite: &summary.BuildkiteInfo{BuildNumber: "101", PullRequest: tt.pullRequest},
				Bench: []summary.BenchRun{{Name: "8k", Config: "8k", Status: summary.StatusOK, Metrics: tputTPOT(90, 20)}}}
			var got *summary.GateResult
			for _, gr := range g.Apply(context.Background(), sum) {
				if gr.Kind == summary.GateRegression && gr.Metric == "output_throughput" {
					got = &gr
				}
			}
			if got == nil || got.Verdict != tt.verdict || got.Detector == nil || got.Detector.Unconfirmed != tt.unconfirmed {
				t.Fatalf("gate = %+v; want verdict %s, unconfirmed %v", got, tt.verdict, tt.unconfirmed)
			}
		})
	}
}
