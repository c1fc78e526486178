package job

import (
	"testing"

	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

func TestRepetitionValues(t *testing.T) {
	t.Parallel()
	policy := &workloads.Regression{Nights: 30, MaxMissing: 25, Metrics: []workloads.RegressionMetric{
		{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: 5},
		{Metric: "median_tpot_ms", MaxDropPct: 10},
		{Metric: "p99_e2el_ms", MaxDropPct: 10}, // not in every repetition
	}}
	res := &workloads.Resolved{Recipe: &workloads.Recipe{Bench: &workloads.Bench{Configs: []workloads.BenchConfig{
		{Name: "gated", Regression: policy}, {Name: "ungated"},
	}}}}
	reps := []results.BenchResult{
		{Numeric: map[string]float64{"output_throughput": 101, "median_tpot_ms": 20.5, "p99_e2el_ms": 900}},
		{Numeric: map[string]float64{"output_throughput": 99, "median_tpot_ms": 19.5}},
		{Numeric: map[string]float64{"output_throughput": 100, "median_tpot_ms": 20, "p99_e2el_ms": 950}},
	}
	j := &Job{res: res}
	tests := []struct {
		name string
		run  workloads.BenchRun
		reps []results.BenchResult
		want map[string][]float64
	}{
		{"gated metrics in repetition order", workloads.BenchRun{Config: "gated"}, reps,
			map[string][]float64{"output_throughput": {101, 99, 100}, "median_tpot_ms": {20.5, 19.5, 20}}},
		{"one repetition is the run's value", workloads.BenchRun{Config: "gated"}, reps[:1], nil},
		{"no regression policy", workloads.BenchRun{Config: "ungated"}, reps, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(j.repetitionValues(tt.run, tt.reps), tt.want); diff != "" {
			t.Errorf("%s: repetitionValues() diff (-got +want):\n%s", tt.name, diff)
		}
	}
}
