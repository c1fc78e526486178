package gate

import (
	"context"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// Every sweep point an aiperf config plans is judged: one that left no
// entry in the summary is an error, not passed over, for its assertions
// and its regression gates alike.
func TestAIPerfJudgesEveryPlannedPoint(t *testing.T) {
	t.Parallel()
	min := 1.0
	c := workloads.AIPerfConfig{Name: "sw", Args: []workloads.BenchArg{{Flag: "--concurrency", Values: []string{"2,4"}}},
		Assertions: []workloads.Assertion{{Metric: "request_throughput", Min: &min}},
		Regression: &workloads.Regression{Nights: 30, MaxMissing: 25, Metrics: []workloads.RegressionMetric{{Metric: "request_throughput", HigherIsBetter: true, MaxDropPct: 5}}}}
	res := &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-h200", AIPerf: &workloads.AIPerf{Configs: []workloads.AIPerfConfig{c}}}}
	src := &baselinetest.Source{Nights: map[string][]baseline.Night{}}
	g := Gater{Res: res, History: src.History()}
	sum := &summary.Summary{Recipe: "r-h200",
		Phases: []summary.Phase{{Name: summary.PhaseAIPerf, Status: summary.StatusOK}},
		Bench: []summary.BenchRun{{Name: "aiperf-sw-concurrency_2", Config: "aiperf-sw", Backend: "aiperf", Status: summary.StatusOK,
			Metrics: map[string]float64{"request_throughput": 3}}}}
	type row struct{ Kind, Subject, Verdict string }
	var got []row
	for _, gr := range g.Apply(context.Background(), sum) {
		if gr.Kind == summary.GateBench || gr.Kind == summary.GateRegression {
			got = append(got, row{gr.Kind, gr.Subject, gr.Verdict})
		}
	}
	want := []row{
		{summary.GateBench, "aiperf-sw-concurrency_2", summary.VerdictPass},
		{summary.GateBench, "aiperf-sw-concurrency_4", summary.VerdictError},
		{summary.GateRegression, "aiperf-sw-concurrency_2", summary.VerdictNoBaseline},
		{summary.GateRegression, "aiperf-sw-concurrency_4", summary.VerdictError},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("aiperf gates diff (-got +want):\n%s", diff)
	}
	sum.Gates = g.Apply(context.Background(), sum)
	if j := JudgeRun(*sum, ""); j.Verdict == summary.VerdictPass || j.Exit() == 0 {
		t.Errorf("verdict = %s (exit %d) with a planned point unmeasured, want neither pass nor 0", j.Verdict, j.Exit())
	}
}
