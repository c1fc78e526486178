package gate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// startupNights are past nights, newest first, with the given times to
// ready and torch.compile, oldest first.
func startupNights(t *testing.T, ready, compile []float64) []baseline.Night {
	t.Helper()
	var out []baseline.Night
	for i := len(ready) - 1; i >= 0; i-- {
		build := 100 - (len(ready) - 1 - i)
		c := compile[i]
		out = append(out, baseline.Night{BuildNumber: build, Summary: baselinetest.Encode(t, summary.Summary{
			Recipe: "r-h200", Verdict: summary.VerdictPass, VLLMCommit: fmt.Sprintf("%07x", 0xabc0000+build),
			Startup: &summary.Startup{ReadySeconds: ready[i], TorchCompileSeconds: &c},
		})})
	}
	return out
}

// A start-up is judged like any other metric: the detector against the
// recipe's past nights, lower being better, only when the recipe asks.
func TestStartupRegression(t *testing.T) {
	t.Parallel()
	policy := &workloads.Regression{Nights: 30, MaxMissing: 25, NoRerun: true, Metrics: []workloads.RegressionMetric{
		{Metric: "ready_s", MaxDropPct: 10}, {Metric: "torch_compile_s", MaxDropPct: 20}}}
	ready, _ := flat(20, 130, 1)
	compile, _ := flat(20, 12, 1)
	tonight := func(ready, compile float64) *summary.Summary {
		return &summary.Summary{Recipe: "r-h200", Phases: []summary.Phase{{Name: summary.PhaseServe, Status: summary.StatusOK}},
			Startup: &summary.Startup{ReadySeconds: ready, TorchCompileSeconds: &compile}}
	}
	type gate struct{ Subject, Metric, Verdict string }
	tests := []struct {
		name    string
		policy  *workloads.Regression
		sum     *summary.Summary
		want    []gate
		message string
	}{
		{"as usual", policy, tonight(131, 12.1), []gate{{"startup", "ready_s", "pass"}, {"startup", "torch_compile_s", "pass"}}, ""},
		{"ready 40 % slower", policy, tonight(182, 12.1), []gate{{"startup", "ready_s", "unconfirmed"}, {"startup", "torch_compile_s", "pass"}}, "startup ready_s = 182"},
		{"torch.compile twice as long", policy, tonight(131, 24), []gate{{"startup", "ready_s", "pass"}, {"startup", "torch_compile_s", "unconfirmed"}}, "startup torch_compile_s = 24"},
		{"not opted in", nil, tonight(182, 24), nil, ""},
		{"attached: not this run's start-up", policy, &summary.Summary{Recipe: "r-h200", Phases: []summary.Phase{{Name: summary.PhaseServe, Status: summary.StatusSkipped, Error: "attached to http://x"}}},
			[]gate{{"startup", "ready_s", "skipped"}, {"startup", "torch_compile_s", "skipped"}}, "not planned"},
		{"never ready", policy, &summary.Summary{Recipe: "r-h200", Phases: []summary.Phase{{Name: summary.PhaseServe, Status: summary.StatusOK}, {Name: summary.PhaseReady, Status: summary.StatusFailed}}},
			[]gate{{"startup", "ready_s", "error"}, {"startup", "torch_compile_s", "error"}}, "not measured: the server did not become ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := &baselinetest.Source{Nights: map[string][]baseline.Night{"r-h200": startupNights(t, ready, compile)}}
			res := &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-h200", VLLM: workloads.VLLM{StartupRegression: tt.policy}}}
			gates := Gater{Res: res, History: src.History()}.Apply(context.Background(), tt.sum)
			var got []gate
			for _, g := range gates {
				if g.Kind == summary.GateRegression {
					v := g.Verdict
					if g.Detector != nil && g.Detector.Unconfirmed {
						// A clean jump's first night waits for the next.
						v = "unconfirmed"
					}
					got = append(got, gate{g.Subject, g.Metric, v})
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("start-up gates (-want +got):\n%s\n%+v", diff, gates)
			}
			if tt.message != "" && !slices.ContainsFunc(gates, func(g summary.GateResult) bool { return strings.Contains(g.Message, tt.message) }) {
				t.Errorf("no gate says %q: %+v", tt.message, gates)
			}
		})
	}
}

// The keys the loader accepts are the keys a summary's start-up has.
func TestStartupMetricKeys(t *testing.T) {
	t.Parallel()
	v := 1.0
	full := summary.Startup{ReadySeconds: 1, WeightsSeconds: &v, ModelLoadSeconds: &v, TorchCompileSeconds: &v, CUDAGraphsSeconds: &v, EngineInitSeconds: &v}
	var keys []string
	for k := range full.Metrics() {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := slices.Sorted(slices.Values(workloads.StartupMetrics))
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-workloads +summary):\n%s", diff)
	}
}
