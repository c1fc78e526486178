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
	metrics := `metrics: {output_throughput: {max_drop_pct: 5}}`
	tests := []struct {
		policy      string
		want        *Accept
		wantNoRerun bool
	}{
		{policy: `{accept: {since: 4711, reason: "fp8 kv cache trades 3 % for memory"}, ` + metrics + `}`,
			want: &Accept{Since: "4711", Build: 4711, Reason: "fp8 kv cache trades 3 % for memory"}},
		{policy: `{accept: {since: 2026-11-30, reason: new default scheduler}, rerun_on_alarm: false, ` + metrics + `}`,
			want: &Accept{Since: "2026-11-30", Date: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), Reason: "new default scheduler"}, wantNoRerun: true},
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
		{`{accept: {since: "4711"}, ` + metrics + `}`, "r.yaml:6:24: vllm_bench.regression.accept needs reason"},
		{`{accept: {reason: slower}, ` + metrics + `}`, "vllm_bench.regression.accept needs since"},
		{`{accept: {since: last tuesday, reason: x}, ` + metrics + `}`, `vllm_bench.regression.accept.since must be a build number or a date (YYYY-MM-DD), got "last tuesday"`},
		{`{accept: {since: "1", reason: ""}, ` + metrics + `}`, "vllm_bench.regression.accept.reason is empty"},
		{`{accept: {since: "1", reason: x, by: me}, ` + metrics + `}`, "by"},
	}
	for _, tt := range rejects {
		_, ps := Parse("r.yaml", []byte(regressionRecipe(tt.policy)), profiles)
		if err := ps.Errors(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) error = %v, want %q", tt.policy, err, tt.want)
		}
	}
}
