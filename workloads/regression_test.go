package workloads

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// regressionRecipe is a valid recipe with the given regression mapping.
func regressionRecipe(policy string) string {
	return `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  regression: ` + policy + `
  configs:
    - {name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}
`
}

func TestRegressionDefaults(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	tests := []struct {
		policy string
		want   Regression
	}{
		// 30 nights, as calibrated; judged from the fifth.
		{policy: `{metrics: {output_throughput: {max_drop_pct: 5}}}`,
			want: Regression{Nights: 30, MaxMissing: 25, Metrics: []RegressionMetric{{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: 5}}}},
		{policy: `{nights: 10, metrics: {median_tpot_ms: {max_drop_pct: 10}}}`,
			want: Regression{Nights: 10, MaxMissing: 5, Metrics: []RegressionMetric{{Metric: "median_tpot_ms", MaxDropPct: 10}}}},
		// Fewer nights than the minimum: all of them are needed.
		{policy: `{nights: 4, metrics: {output_throughput: {max_drop_pct: 5}}}`,
			want: Regression{Nights: 4, MaxMissing: 0, Metrics: []RegressionMetric{{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: 5}}}},
		{policy: `{nights: 30, max_missing: 27, metrics: {output_throughput: {max_drop_pct: 5}}}`,
			want: Regression{Nights: 30, MaxMissing: 27, Metrics: []RegressionMetric{{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: 5}}}},
	}
	for _, tt := range tests {
		r, ps := Parse("r.yaml", []byte(regressionRecipe(tt.policy)), profiles)
		if err := ps.Errors(); err != nil || r == nil {
			t.Fatalf("Parse(%s) = %v, %v", tt.policy, r, err)
		}
		if diff := cmp.Diff(*r.Bench.Regression, tt.want); diff != "" {
			t.Errorf("Parse(%s).Bench.Regression diff (-got +want):\n%s", tt.policy, diff)
		}
	}
}

func TestRegressionRejects(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	tests := []struct{ policy, want string }{
		{`{nights: 2, metrics: {output_throughput: {max_drop_pct: 5}}}`, "r.yaml:6:24: vllm_bench.regression.nights must be"},
		{`{nights: 30, max_missing: 28, metrics: {output_throughput: {max_drop_pct: 5}}}`,
			"r.yaml:6:15: vllm_bench.regression.max_missing (28) must leave at least 3 of the 30 nights"},
	}
	for _, tt := range tests {
		_, ps := Parse("r.yaml", []byte(regressionRecipe(tt.policy)), profiles)
		err := ps.Errors()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) error = %v, want %q", tt.policy, err, tt.want)
		}
	}
}
