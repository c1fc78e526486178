package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/benchkite/benchkite/workloads/workloadstest"
	"github.com/google/go-cmp/cmp"
)

const flexible = "exact_match,flexible-extract"

func accuracyNight(t *testing.T, build int, recipe string, score float64) baseline.Night {
	t.Helper()
	return baseline.Night{BuildNumber: build, Summary: baselinetest.Encode(t, summary.Summary{
		Recipe:  recipe,
		Verdict: summary.VerdictPass,
		Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK,
			Metrics: map[string]float64{flexible: score, "exact_match,strict-match": score - 0.05}}},
	})}
}

func gsm8kSummary(recipe string, score float64) *summary.Summary {
	return &summary.Summary{Recipe: recipe, Accuracy: []summary.TaskResult{{Task: "gsm8k", NumFewshot: 5, Status: summary.StatusOK,
		Metrics: map[string]float64{flexible: score}}}}
}

// noSecrets is a proc.Runner whose every command exits 1, as
// `buildkite-agent secret get` does for a missing secret; it records the
// argv of each.
type noSecrets struct {
	startsNothing
	mu   sync.Mutex
	runs [][]string
}

// startsNothing is the Start of a proc.Runner fake that only runs
// commands to their end.
type startsNothing struct{}

func (startsNothing) Start(_ context.Context, s proc.Spec) (proc.Process, error) {
	return nil, fmt.Errorf("unexpected start of %q", s.Argv)
}

func (n *noSecrets) Run(_ context.Context, s proc.Spec) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.runs = append(n.runs, s.Argv)
	return &proc.ExitError{Name: s.Argv[0], Code: 1}
}

func TestSeedRecipeWithoutToken(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, seedRecipe, nil)
	fake := &noSecrets{}
	getenv := mapGetenv(nil)
	cfg := baseline.APIConfig{URL: "http://127.0.0.1:1/", TokenEnv: "BUILDKITE_API_TOKEN", TokenSecret: "BENCHKITE_API_TOKEN"}

	var log strings.Builder
	j := &Job{res: res, log: &log, sum: *gsm8kSummary(res.Recipe.Name, 0.93), procs: fake}
	j.sum.Bench = []summary.BenchRun{{Name: "8k-in-1k-out-conc-128", Config: "8k-in-1k-out-conc-128", Status: summary.StatusOK,
		Metrics: map[string]float64{"output_throughput": 1000, "median_tpot_ms": 20}}}
	bk, err := j.buildkite()
	if err != nil {
		t.Fatal(err)
	}
	j.history = baseline.NewHistory(baseline.APISource(cfg, bk.API, getenv))

	if err := j.gate(context.Background()); err != nil {
		t.Fatalf("gate() error = %v, want nil: no baseline is a warning", err)
	}
	if len(j.sum.Gates) != 4 || j.sum.Gates[3].Kind != summary.GateSpecDecode || j.sum.Gates[3].Verdict != summary.VerdictUnverified {
		t.Fatalf("gates = %+v, want the gsm8k gate, two regression gates and an unverified spec_decode gate (no acceptance reported)", j.sum.Gates)
	}
	for _, g := range j.sum.Gates[:3] {
		if g.Verdict != summary.VerdictNoBaseline {
			t.Errorf("%s %s verdict = %q, want %q", g.Subject, g.Metric, g.Verdict, summary.VerdictNoBaseline)
		}
		if !strings.Contains(g.Message, "no baseline") || !strings.Contains(g.Message, "BUILDKITE_API_TOKEN is not set") {
			t.Errorf("%s %s message = %q, want it to say why there is no baseline", g.Subject, g.Metric, g.Message)
		}
	}
	if got := j.sum.Gates[0]; got.Value == nil || *got.Value != 0.93 || got.Baseline != nil || got.Bound != "within 0.015 of minimax_m3-nospec-mi355x" {
		t.Errorf("gsm8k gate = %+v, want value 0.93, no baseline, bound naming the other recipe", got)
	}
	if !strings.Contains(log.String(), "⚠️ gsm8k") {
		t.Errorf("log = %q, want the warning shown", log.String())
	}
	// Nothing failed, but nothing was compared either: unverified.
	if got := j.verdict(context.Background()).Verdict; got != summary.VerdictUnverified {
		t.Errorf("verdict() = %q, want %q", got, summary.VerdictUnverified)
	}
	// The one baseline history asks the agent for the token once.
	if diff := cmp.Diff(fake.runs, [][]string{{"buildkite-agent", "secret", "get", "BENCHKITE_API_TOKEN"}}); diff != "" {
		t.Errorf("commands run diff (-got +want):\n%s", diff)
	}
}

func accuracyRecipe(e ...workloads.Expectation) *workloads.Resolved {
	return &workloads.Resolved{
		Recipe: &workloads.Recipe{Name: "r-mi355x"},
		Tasks:  []workloads.ResolvedTask{{Name: "gsm8k", NumFewshot: 5, Expect: e}},
	}
}

func TestJobVerdict(t *testing.T) {
	t.Parallel()
	ok := func(name string) summary.Phase { return summary.Phase{Name: name, Status: summary.StatusOK} }
	failed := func(name string) summary.Phase {
		return summary.Phase{Name: name, Status: summary.StatusFailed, Error: "boom"}
	}
	gate := func(v string) summary.GateResult {
		return summary.GateResult{Kind: "accuracy", Subject: "gsm8k", Verdict: v}
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		phases []summary.Phase
		gates  []summary.GateResult
		want   string
	}{
		{"all ok", context.Background(), []summary.Phase{ok("serve"), ok("bench"), ok("gate")}, []summary.GateResult{gate("pass")}, "pass"},
		{"skipped (not planned) gates pass", context.Background(), []summary.Phase{ok("bench"), {Name: "lm_eval", Status: summary.StatusSkipped}, ok("gate")},
			[]summary.GateResult{gate("skipped"), gate("pass")}, "pass"},
		{"a no-baseline gate leaves the run unverified", context.Background(), []summary.Phase{ok("bench"), ok("gate")},
			[]summary.GateResult{gate("no-baseline"), gate("pass")}, "unverified"},
		{"an unverified gate leaves the run unverified", context.Background(), []summary.Phase{ok("bench"), ok("gate")},
			[]summary.GateResult{gate("unverified"), gate("pass")}, "unverified"},
		{"a failed gate beats unverified", context.Background(), []summary.Phase{ok("bench"), failed("gate")},
			[]summary.GateResult{gate("no-baseline"), gate("fail")}, "fail"},
		{"a gate without a value is an error", context.Background(), []summary.Phase{ok("bench"), ok("gate")},
			[]summary.GateResult{gate("error"), gate("pass")}, "error"},
		{"a planned phase not run is an error", context.Background(), []summary.Phase{ok("bench"), {Name: "lm_eval", Status: summary.StatusNotRun}, ok("gate")},
			[]summary.GateResult{gate("pass")}, "error"},
		{"failed gate", context.Background(), []summary.Phase{ok("bench"), failed("gate")}, []summary.GateResult{gate("pass"), gate("fail")}, "fail"},
		{"failed bench is an error, before a failed gate", context.Background(), []summary.Phase{failed("bench"), failed("gate")}, []summary.GateResult{gate("fail")}, "error"},
		{"failed serve", context.Background(), []summary.Phase{failed("serve"), {Name: "ready", Status: summary.StatusSkipped}}, nil, "error"},
		{"failed lm_eval", context.Background(), []summary.Phase{ok("bench"), failed("lm_eval"), ok("gate")}, nil, "error"},
		{"failed publish does not change the verdict", context.Background(), []summary.Phase{ok("bench"), ok("gate"), failed("publish")}, []summary.GateResult{gate("pass")}, "pass"},
		{"canceled", canceled, []summary.Phase{ok("serve"), {Name: "bench", Status: summary.StatusCanceled}}, []summary.GateResult{gate("pass")}, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := &Job{sum: summary.Summary{Phases: tt.phases, Gates: tt.gates}}
			if got := j.verdict(tt.ctx).Verdict; got != tt.want {
				t.Errorf("verdict() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestJobGateFailsOnlyForFailedGates(t *testing.T) {
	t.Parallel()
	res := accuracyRecipe(
		workloads.Expectation{Metric: flexible, Min: ptr(0.8)},
		workloads.Expectation{Metric: "acc", Min: ptr(0.5)}, // not produced: an error
		workloads.Expectation{Metric: flexible, BaselineFrom: "other-mi355x", Tolerance: 0.01},
	)
	tests := []struct {
		name    string
		score   float64
		wantErr string
	}{
		{"no failure with an error gate and a missing baseline", 0.9, ""},
		{"fail", 0.7, "1 gate(s) failed: gsm8k exact_match,flexible-extract = 0.7000, must be >= 0.8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log strings.Builder
			j := &Job{res: res, log: &log, sum: *gsm8kSummary("r-mi355x", tt.score), history: (&baselinetest.Source{}).History()}
			err := j.gate(context.Background())
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("gate() error = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Errorf("gate() error = %v, want %q", err, tt.wantErr)
			}
			var verdicts []string
			for _, g := range j.sum.Gates {
				verdicts = append(verdicts, g.Verdict)
			}
			wantFirst := summary.VerdictPass
			if tt.wantErr != "" {
				wantFirst = summary.VerdictFail
			}
			if diff := cmp.Diff(verdicts, []string{wantFirst, "error", "no-baseline"}); diff != "" {
				t.Errorf("gate verdicts diff (-got +want):\n%s", diff)
			}
			if lines := strings.Count(log.String(), "\n"); lines != 3 {
				t.Errorf("log has %d lines, want one per gate:\n%s", lines, log.String())
			}
		})
	}
}

func TestJobGatePhaseRecordsFailure(t *testing.T) {
	t.Parallel()
	res := accuracyRecipe(workloads.Expectation{Metric: flexible, Min: ptr(0.8)})
	j := New(Config{Port: 8000}, res, Deps{Log: io.Discard, Getenv: mapGetenv(nil), Baselines: func(context.Context) (baseline.Source, error) { return nil, errors.New("no source") }})
	j.sum.Accuracy = gsm8kSummary("r-mi355x", 0.5).Accuracy
	if ok := j.phase(context.Background(), summary.PhaseGate, j.gate); ok {
		t.Fatal("phase(gate) = true, want false for a failed gate")
	}
	p := j.sum.Phase(summary.PhaseGate)
	if p == nil || p.Status != summary.StatusFailed || !strings.Contains(p.Error, "must be >= 0.8") {
		t.Errorf("gate phase = %+v, want failed naming the gate", p)
	}
	judged := j.verdict(context.Background())
	got, problems := judged.Verdict, judged.Problems
	if got != summary.VerdictFail || len(problems) != 0 {
		t.Errorf("verdict() = %q, %q; want %q and no other problem", got, problems, summary.VerdictFail)
	}
}
