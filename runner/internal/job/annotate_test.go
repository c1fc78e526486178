package job

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/benchkite/benchkite/workloads/workloadstest"
)

const sweepRecipe = "../../testdata/recipes/sweep_mi300x.yaml"

func seedBench(tput, tpot float64) summary.BenchRun {
	return summary.BenchRun{
		Name: "8k-in-1k-out-conc-128", Config: "8k-in-1k-out-conc-128", Concurrency: 128, NumPrompts: 512,
		InputLen: 8192, OutputLen: 1024, Repetitions: 1, Backend: "openai", Status: summary.StatusOK,
		File:              "bench-8k-in-1k-out-conc-128.json",
		RequestThroughput: tput / 1024, OutputThroughput: tput, TotalTokenThroughput: tput * 9,
		OutputThroughputPerGPU: tput / 8, TotalThroughputPerGPU: tput * 9 / 8,
		TTFT:       summary.Latency{Mean: 2100, Median: 1850.25, P99: 6400.5},
		TPOT:       summary.Latency{Mean: tpot + 1, Median: tpot, P99: tpot * 2},
		ITL:        summary.Latency{Mean: 45, Median: 41.5, P99: 120},
		SpecDecode: &summary.SpecDecode{AcceptanceRate: 62.5, AcceptanceLength: 2.87},
		Metrics:    map[string]float64{"output_throughput": tput, "median_tpot_ms": tpot},
	}
}

func seedRun(score, tput, tpot float64) summary.Summary {
	ok := func(name string) summary.Phase { return summary.Phase{Name: name, Status: summary.StatusOK} }
	return summary.Summary{
		SchemaVersion: summary.SchemaVersion, Recipe: "minimax_m3-mi355x", GPU: "MI355X", Device: "mi355x", NumGPUs: 8, TP: 8,
		Precision: "mxfp8", Model: "MiniMaxAI/MiniMax-M3-MXFP8", Image: "vllm/vllm-openai-rocm:nightly-0123abc", VLLMCommit: "0123abc",
		ImageTag: "nightly-0123abc", ImageDigest: "sha256:5d0f3c1e9a7b",
		Buildkite: &summary.BuildkiteInfo{BuildNumber: "812", BuildURL: "https://buildkite.com/vllm/benchkite/builds/812",
			JobID: "0190f3a2-0000-4000-8000-000000000812", StepKey: "recipe:minimax_m3-mi355x", Branch: "main", BaselineBranch: "main", Source: "schedule"},
		Phases: []summary.Phase{ok("serve"), ok("ready"), ok("bench"), ok("lm_eval")},
		Bench:  []summary.BenchRun{seedBench(tput, tpot)},
		Accuracy: []summary.TaskResult{{Task: "gsm8k", NumFewshot: 5, Status: summary.StatusOK, Samples: 1319, File: "gsm8k/results.json",
			Metrics: map[string]float64{flexible: score, "exact_match,strict-match": score - 0.02},
			Stderr:  map[string]float64{flexible: 0.0071, "exact_match,strict-match": 0.0075}}},
	}
}

func seedNights(t *testing.T) map[string][]baseline.Night {
	var own []baseline.Night
	for i, v := range [][2]float64{{1480, 20.5}, {1470, 20.9}, {1495, 20.1}, {1500, 20.6}, {1460, 20.4}} {
		s := seedRun(0.93, v[0], v[1])
		s.VLLMCommit = fmt.Sprintf("%07x", 0x89ab012-i*0x111)
		own = append(own, baseline.Night{BuildNumber: 80 - i, Summary: baselinetest.Encode(t, s)})
	}
	return map[string][]baseline.Night{
		"minimax_m3-nospec-mi355x": {accuracyNight(t, 41, "minimax_m3-nospec-mi355x", 0.94)},
		"minimax_m3-mi355x":        own,
	}
}

func gated(t *testing.T, res *workloads.Resolved, s summary.Summary, history *baseline.History) summary.Summary {
	t.Helper()
	j := &Job{res: res, log: &strings.Builder{}, sum: s, now: func() time.Time { return time.Time{} }, history: history}
	j.phase(context.Background(), summary.PhaseGate, j.gate)
	judge(context.Background(), j)
	j.sum.Failure = j.failure()
	return j.sum
}

func annotationCases(t *testing.T) []struct {
	name, trend, wantVerdict string
	sum                      summary.Summary
} {
	seed := workloadstest.Resolve(t, seedRecipe, nil)
	sweep := workloadstest.Resolve(t, sweepRecipe, nil)
	withNights := (&baselinetest.Source{Nights: seedNights(t)}).History()
	noToken := baseline.NewHistory(func(context.Context) (baseline.Source, error) {
		return nil, fmt.Errorf("%w: BUILDKITE_API_TOKEN is not set and buildkite-agent secret get BENCHKITE_API_TOKEN failed: exit status 1", bkapi.ErrNoToken)
	})

	partial := summary.Summary{
		SchemaVersion: summary.SchemaVersion, Recipe: "sweep-mi300x", GPU: "MI300X", Device: "mi300x", NumGPUs: 8, TP: 8,
		Precision: "bf16", Model: "Qwen/Qwen3-8B", Image: "vllm/vllm-openai-rocm:nightly",
		Phases: []summary.Phase{
			{Name: "serve", Status: summary.StatusOK}, {Name: "ready", Status: summary.StatusOK},
			{Name: "bench", Status: summary.StatusFailed, Error: "1k-in-1k-out-conc-64: repetition 1: vllm bench serve: exit status 1\r\nTraceback (most recent call last):\n  File \"bench.py\" | line 3\nRuntimeError: <CUDA> `error`"},
			{Name: "lm_eval", Status: summary.StatusFailed, Error: "gsm8k: lm_eval: exit status 2"},
		},
		Bench: []summary.BenchRun{
			{Name: "1k-in-1k-out-conc-8", Config: "1k-in-1k-out", Concurrency: 8, NumPrompts: 64, Repetitions: 1, Status: summary.StatusOK,
				OutputThroughput: 812.4, OutputThroughputPerGPU: 101.55, TotalTokenThroughput: 1624.8,
				TTFT: summary.Latency{Median: 95.2, P99: 210.7}, TPOT: summary.Latency{Median: 9.71}, ITL: summary.Latency{Median: 9.65},
				Metrics: map[string]float64{"output_throughput": 812.4}},
			{Name: "1k-in-1k-out-conc-64", Config: "1k-in-1k-out", Concurrency: 64, NumPrompts: 512, Repetitions: 1, Status: summary.StatusFailed,
				Error: "repetition 1: vllm bench serve: exit status 1 | see bench-1k-in-1k-out-conc-64.log\nline two"},
		},
		Accuracy: []summary.TaskResult{{Task: "gsm8k", NumFewshot: 5, Status: summary.StatusFailed, Error: "lm_eval: exit status 2\nConnectionError: server closed | retry"}},
	}
	// vLLM ran out of GPU memory while loading: the runner saw the
	// server exit, the cause line is the one that says why.
	oom := seedRun(0, 0, 0)
	oom.Bench, oom.Accuracy = nil, nil
	oom.Phases = []summary.Phase{{Name: "serve", Status: summary.StatusOK},
		{Name: "ready", Status: summary.StatusFailed, Error: "server exited with status 1 before it was healthy (after 4m12s); see server.log",
			Cause: "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 287.98 GiB of which 1.21 GiB is free."},
		{Name: "bench", Status: summary.StatusNotRun, Error: "server exited"}, {Name: "lm_eval", Status: summary.StatusNotRun, Error: "server exited"}}
	sweepNights := (&baselinetest.Source{Nights: map[string][]baseline.Night{"sweep-mi300x": {
		{BuildNumber: 12, Summary: baselinetest.Encode(t, summary.Summary{Recipe: "sweep-mi300x", Bench: partial.Bench[:1]})},
		{BuildNumber: 11, Summary: baselinetest.Encode(t, summary.Summary{Recipe: "sweep-mi300x", Bench: []summary.BenchRun{{Name: "1k-in-1k-out-conc-8", Status: "ok", Metrics: map[string]float64{"output_throughput": 800}}}})},
		{BuildNumber: 10, Summary: baselinetest.Encode(t, summary.Summary{Recipe: "sweep-mi300x", Bench: []summary.BenchRun{{Name: "1k-in-1k-out-conc-8", Status: "ok", Metrics: map[string]float64{"output_throughput": 820}}}})},
	}}}).History()

	return []struct {
		name, trend, wantVerdict string
		sum                      summary.Summary
	}{
		{"pass", "results/minimax_m3-mi355x/trend.svg", summary.VerdictPass, gated(t, seed, seedRun(0.93, 1490, 20.2), withNights)},
		{"accuracy_regression", "", summary.VerdictFail, gated(t, seed, seedRun(0.90, 1490, 20.2), withNights)},
		{"perf_regression", "", summary.VerdictFail, gated(t, seed, seedRun(0.93, 1300, 24), withNights)},
		{"no_baseline", "", summary.VerdictUnverified, gated(t, seed, seedRun(0.93, 1490, 20.2), noToken)},
		{"partial_failure", "", summary.VerdictError, gated(t, sweep, partial, sweepNights)},
		{"oom", "", summary.VerdictError, gated(t, seed, oom, withNights)},
	}
}

func TestRenderAnnotationGolden(t *testing.T) {
	t.Parallel()
	for _, tt := range annotationCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.sum.Verdict != tt.wantVerdict {
				t.Errorf("verdict = %q, want %q; gates: %+v", tt.sum.Verdict, tt.wantVerdict, tt.sum.Gates)
			}
			got := annotate.Render(tt.sum, tt.trend)
			testutil.CheckMarkdownTables(t, got)
			checkGolden(t, "annotations/"+tt.name+".md", []byte(got))
		})
	}
}

func TestNewDefaults(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, seedRecipe, nil)
	tests := []struct {
		cfg              Config
		wantDir, wantURL string
	}{
		{Config{Port: 8000}, filepath.Join("results", "minimax_m3-mi355x"), "http://127.0.0.1:8000"},
		{Config{Port: 9000, ResultsDir: "out", BaseURL: "http://10.0.0.5:8000/"}, "out", "http://10.0.0.5:8000"},
	}
	for _, tt := range tests {
		j := New(tt.cfg, res, Deps{Log: io.Discard, Getenv: mapGetenv(map[string]string{"BUILDKITE_JOB_ID": "j1", "BUILDKITE_STEP_KEY": "recipe:minimax_m3-mi355x"})})
		if j.dir != tt.wantDir || j.baseURL != tt.wantURL {
			t.Errorf("New(%+v): dir %q, base URL %q; want %q, %q", tt.cfg, j.dir, j.baseURL, tt.wantDir, tt.wantURL)
		}
		if j.sum.Buildkite == nil || j.sum.Buildkite.JobID != "j1" || j.sum.Recipe != "minimax_m3-mi355x" || j.sum.TP != 8 {
			t.Errorf("New summary head = %+v", j.sum)
		}
		if j.sum.Bench == nil || j.sum.Gates == nil {
			t.Errorf("new summary lists are nil, want empty so summary.json says []: %+v", j.sum)
		}
	}
}
