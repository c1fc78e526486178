package workloads

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRegressionAccept(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	metrics := `metrics: {output_throughput: {max_drop_pct: 5}, median_tpot_ms: {max_drop_pct: 5}}`
	tests := []struct {
		policy      string
		want        *Accept
		wantNoRerun bool
	}{
		{policy: `{accept: {since: 4711, reason: "fp8 kv cache trades 3 % for memory", metrics: {output_throughput: 3}}, ` + metrics + `}`,
			want: &Accept{Since: "4711", Build: 4711, Reason: "fp8 kv cache trades 3 % for memory", Metrics: map[string]float64{"output_throughput": 3}}},
		{policy: `{accept: {since: 2026-11-30, reason: new default scheduler, metrics: {output_throughput: 2.5, median_tpot_ms: 4}}, rerun_on_alarm: false, ` + metrics + `}`,
			want: &Accept{Since: "2026-11-30", Date: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), Reason: "new default scheduler",
				Metrics: map[string]float64{"output_throughput": 2.5, "median_tpot_ms": 4}}, wantNoRerun: true},
		{policy: `{` + metrics + `}`},
	}
	for _, tt := range tests {
		r, ps := Parse("r.yaml", []byte(regressionRecipe(tt.policy)), profiles)
		if err := ps.Errors(); err != nil || r == nil {
			t.Fatalf("Parse(%s) = %v, %v", tt.policy, r, err)
		}
		got := r.Bench.Regression
		if diff := cmp.Diff(got.Accept, tt.want); diff != "" || got.NoRerun != tt.wantNoRerun {
			t.Errorf("Parse(%s) accept diff (-got +want):\n%s, no rerun %v", tt.policy, diff, got.NoRerun)
		}
	}
	rejects := []struct{ policy, want string }{
		{`{accept: {since: "4711", metrics: {output_throughput: 3}}, ` + metrics + `}`, "r.yaml:6:24: vllm_bench.regression.accept needs reason"},
		{`{accept: {reason: slower, metrics: {output_throughput: 3}}, ` + metrics + `}`, "vllm_bench.regression.accept needs since"},
		{`{accept: {since: last tuesday, reason: x, metrics: {output_throughput: 3}}, ` + metrics + `}`, `vllm_bench.regression.accept.since must be a build number or a date (YYYY-MM-DD), got "last tuesday"`},
		{`{accept: {since: "1", reason: "", metrics: {output_throughput: 3}}, ` + metrics + `}`, "vllm_bench.regression.accept.reason is empty"},
		{`{accept: {since: "1", reason: x, by: me, metrics: {output_throughput: 3}}, ` + metrics + `}`, "by"},
		// An acceptance names what it accepts, and by how much.
		{`{accept: {since: "1", reason: x}, ` + metrics + `}`, "vllm_bench.regression.accept needs metrics: each accepted metric and how many percent worse it may be"},
		{`{accept: {since: "1", reason: x, metrics: {output_throughput: 0}}, ` + metrics + `}`, "vllm_bench.regression.accept.metrics.output_throughput must be above 0 and below 100"},
		{`{accept: {since: "1", reason: x, metrics: {output_throughput: 100}}, ` + metrics + `}`, "must be above 0 and below 100"},
		{`{accept: {since: "1", reason: x, metrics: {output_throughput: all}}, ` + metrics + `}`, "vllm_bench.regression.accept.metrics.output_throughput must be a number"},
		{`{accept: {since: "1", reason: x, metrics: {mean_ttft_ms: 3}}, ` + metrics + `}`, `vllm_bench.regression.accept.metrics: "mean_ttft_ms" is not a metric this regression judges`},
	}
	for _, tt := range rejects {
		_, ps := Parse("r.yaml", []byte(regressionRecipe(tt.policy)), profiles)
		if err := ps.Errors(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) error = %v, want %q", tt.policy, err, tt.want)
		}
	}
}
