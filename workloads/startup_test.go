package workloads

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// startupRecipe is a valid recipe with the given vllm.startup_regression.
func startupRecipe(policy string) string {
	return `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  startup_regression: ` + policy + `
vllm_bench:
  configs:
    - {name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}
`
}

func TestStartupRegression(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	tests := []struct {
		policy string
		want   Regression
	}{
		{`{metrics: {ready_s: {max_drop_pct: 20}}}`,
			Regression{Nights: 30, MaxMissing: 25, NoRerun: true, Metrics: []RegressionMetric{{Metric: "ready_s", MaxDropPct: 20}}}},
		{`{nights: 10, metrics: {torch_compile_s: {max_drop_pct: 50, direction: lower}, engine_init_s: {max_drop_pct: 25}}}`,
			Regression{Nights: 10, MaxMissing: 5, NoRerun: true, Metrics: []RegressionMetric{{Metric: "torch_compile_s", MaxDropPct: 50}, {Metric: "engine_init_s", MaxDropPct: 25}}}},
	}
	for _, tt := range tests {
		r, ps := Parse("r.yaml", []byte(startupRecipe(tt.policy)), profiles)
		if err := ps.Errors(); err != nil || r == nil {
			t.Fatalf("Parse(%s) = %v, %v", tt.policy, r, err)
		}
		if diff := cmp.Diff(tt.want, *r.VLLM.StartupRegression); diff != "" {
			t.Errorf("Parse(%s).VLLM.StartupRegression (-want +got):\n%s", tt.policy, diff)
		}
	}
	// Opt-in: a recipe without it judges no start-up.
	r, ps := Parse("r.yaml", []byte(strings.Replace(startupRecipe("x"), "  startup_regression: x\n", "", 1)), profiles)
	if err := ps.Errors(); err != nil || r.VLLM.StartupRegression != nil {
		t.Errorf("without the field: %v, %+v", err, r.VLLM.StartupRegression)
	}
}

func TestStartupRegressionRejects(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	tests := []struct{ policy, want string }{
		{`{metrics: {output_throughput: {max_drop_pct: 5}}}`, `r.yaml:6:34: vllm.startup_regression.metrics: "output_throughput" is not a start-up time; one of ready_s, weights_load_s`},
		{`{metrics: {ready_s: {}}}`, "r.yaml:6:43: vllm.startup_regression.metrics.ready_s needs max_drop_pct"},
		{`{metrics: {ready_s: {max_drop_pct: 5, direction: higher}}}`, `vllm.startup_regression.metrics.ready_s.direction: a start-up time is better lower, got "higher"`},
		{`{nights: 30}`, "r.yaml:6:23: vllm.startup_regression needs metrics"},
		{`{nights: 30, max_missing: 28, metrics: {ready_s: {max_drop_pct: 5}}}`, "vllm.startup_regression.max_missing (28) must leave at least 3 of the 30 nights"},
		{`{metrics: {ready_s: {max_drop_pct: 5}}, rerun_on_alarm: true}`, "rerun_on_alarm"},
		{`yes`, "r.yaml:6:23: vllm.startup_regression"},
	}
	for _, tt := range tests {
		_, ps := Parse("r.yaml", []byte(startupRecipe(tt.policy)), profiles)
		err := ps.Errors()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) error = %v, want %q", tt.policy, err, tt.want)
		}
	}
}
