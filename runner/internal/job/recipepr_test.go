package job

import (
	"context"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads/workloadstest"
)

// A pull request that changes a serve arg is judged against the recipe's
// nightlies under the old arg: slower says so, in red, with the delta;
// no different is green. The fingerprints are the job's own.
func TestRecipePRJudgedAgainstTheLastNightlies(t *testing.T) {
	t.Parallel()
	before := workloadstest.Resolve(t, "testdata/recipepr/before.yaml", nil)
	after := workloadstest.Resolve(t, "testdata/recipepr/after.yaml", nil)
	oldFP, newFP := fingerprint(before), fingerprint(after)
	if oldFP.Hash == newFP.Hash {
		t.Fatal("changing --max-num-seqs left the fingerprint alone")
	}
	run := before.BenchRuns[0].Name
	wobble := []float64{0, 0.6, -0.4, 0.3, -0.7, 0.5, -0.2, 0.8, -0.5, 0.1, -0.3, 0.4}
	var nights []baseline.Night
	for i := range 12 { // newest first, builds 200 down to 189
		nights = append(nights, baseline.Night{BuildNumber: 200 - i, Summary: baselinetest.Encode(t, summary.Summary{
			Recipe: "tiny-h200", Verdict: summary.VerdictPass, Fingerprint: oldFP,
			Bench: []summary.BenchRun{{Name: run, Config: "c", Status: summary.StatusOK,
				Metrics: map[string]float64{"output_throughput": 1000 * (1 + wobble[i]/100)}}},
		})})
	}
	tests := []struct {
		name    string
		tput    float64
		verdict string
		message []string
	}{
		{name: "8 % slower", tput: 920, verdict: summary.VerdictFail,
			message: []string{"8.0% worse than the baseline 1000", "recipe changed tonight (serve args)", "the latest #200 at 1000"}},
		{name: "no difference", tput: 1002, verdict: summary.VerdictPass,
			message: []string{"better than the baseline 1000", "recipe changed tonight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := &baselinetest.Source{Nights: map[string][]baseline.Night{"tiny-h200": nights}}
			sum := &summary.Summary{Recipe: "tiny-h200", Fingerprint: newFP, Buildkite: &summary.BuildkiteInfo{BuildNumber: "201"},
				Bench: []summary.BenchRun{{Name: run, Config: "c", Status: summary.StatusOK, Metrics: map[string]float64{"output_throughput": tt.tput}}}}
			gates := gate.Gater{Res: after, History: src.History()}.Apply(context.Background(), sum)
			if len(gates) != 1 || gates[0].Kind != summary.GateRegression {
				t.Fatalf("Apply() = %+v, want one regression gate", gates)
			}
			g := gates[0]
			if g.Verdict != tt.verdict || g.DeltaPct == nil {
				t.Errorf("verdict %q, delta %v; want %q with a delta: %s", g.Verdict, g.DeltaPct, tt.verdict, g.Message)
			}
			for _, m := range tt.message {
				if !strings.Contains(g.Message, m) {
					t.Errorf("message = %q\nwant it to contain %q", g.Message, m)
				}
			}
		})
	}
}
