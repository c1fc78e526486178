package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

const sweepRecipe = "testdata/recipes/sweep_mi300x.yaml"

// seedBench is a seed-recipe bench run with EAGLE acceptance.
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

// seedRun is a finished seed-recipe summary before gating.
func seedRun(score, tput, tpot float64) summary.Summary {
	ok := func(name string) summary.Phase { return summary.Phase{Name: name, Status: summary.StatusOK} }
	return summary.Summary{
		SchemaVersion: summary.SchemaVersion, Recipe: "minimax_m3-mi355x", GPU: "MI355X", Device: "mi355x", NumGPUs: 8, TP: 8,
		Precision: "fp8", Model: "MiniMaxAI/MiniMax-M3-MXFP8", Image: "vllm/vllm-openai-rocm:nightly-0123abc", VLLMCommit: "0123abc",
		Phases: []summary.Phase{ok("serve"), ok("ready"), ok("bench"), ok("lm_eval")},
		Bench:  []summary.BenchRun{seedBench(tput, tpot)},
		Accuracy: []summary.TaskResult{{Task: "gsm8k", NumFewshot: 5, Status: summary.StatusOK, Samples: 1319, File: "gsm8k/results.json",
			Metrics: map[string]float64{flexible: score, "exact_match,strict-match": score - 0.02},
			Stderr:  map[string]float64{flexible: 0.0071, "exact_match,strict-match": 0.0075}}},
	}
}

// seedNights: the no-spec recipe's last night, and five nights of the seed
// recipe with a median of 1480 tok/s and 20.5 ms TPOT.
func seedNights(t *testing.T) map[string][]baseline.Night {
	var own []baseline.Night
	for i, v := range [][2]float64{{1480, 20.5}, {1470, 20.9}, {1495, 20.1}, {1500, 20.6}, {1460, 20.4}} {
		s := seedRun(0.93, v[0], v[1])
		own = append(own, baseline.Night{BuildNumber: 80 - i, Summary: nightSummary(t, s)})
	}
	return map[string][]baseline.Night{
		"minimax_m3-nospec-mi355x": {accuracyNight(t, 41, "minimax_m3-nospec-mi355x", 0.94)},
		"minimax_m3-mi355x":        own,
	}
}

// gated applies the recipe's gates to s as the gate phase does, and sets
// the verdict.
func gated(t *testing.T, res *workloads.Resolved, s summary.Summary, source func(context.Context) (baselineSource, error)) summary.Summary {
	t.Helper()
	j := &job{res: res, log: &strings.Builder{}, sum: s, now: func() time.Time { return time.Time{} }}
	j.gates = gater{res: res, source: source}
	j.phase(context.Background(), summary.PhaseGate, j.gate)
	j.sum.Verdict = j.verdict(context.Background())
	return j.sum
}

func annotationCases(t *testing.T) []struct {
	name, trend, wantVerdict string
	sum                      summary.Summary
} {
	seed := resolveRecipe(t, seedRecipe, nil)
	sweep := resolveRecipe(t, sweepRecipe, nil)
	withNights := (&fakeSource{nights: seedNights(t)}).factory()
	noToken := func(context.Context) (baselineSource, error) {
		return nil, fmt.Errorf("%w: BUILDKITE_API_TOKEN is not set and buildkite-agent secret get BENCHKITE_API_TOKEN failed: exit status 1", bkapi.ErrNoToken)
	}

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
	sweepNights := (&fakeSource{nights: map[string][]baseline.Night{"sweep-mi300x": {
		{BuildNumber: 12, Summary: nightSummary(t, summary.Summary{Recipe: "sweep-mi300x", Bench: partial.Bench[:1]})},
		{BuildNumber: 11, Summary: nightSummary(t, summary.Summary{Recipe: "sweep-mi300x", Bench: []summary.BenchRun{{Name: "1k-in-1k-out-conc-8", Status: "ok", Metrics: map[string]float64{"output_throughput": 800}}}})},
		{BuildNumber: 10, Summary: nightSummary(t, summary.Summary{Recipe: "sweep-mi300x", Bench: []summary.BenchRun{{Name: "1k-in-1k-out-conc-8", Status: "ok", Metrics: map[string]float64{"output_throughput": 820}}}})},
	}}}).factory()

	return []struct {
		name, trend, wantVerdict string
		sum                      summary.Summary
	}{
		{"pass", "results/minimax_m3-mi355x/trend.svg", summary.VerdictPass, gated(t, seed, seedRun(0.93, 1490, 20.2), withNights)},
		{"accuracy_regression", "", summary.VerdictFail, gated(t, seed, seedRun(0.90, 1490, 20.2), withNights)},
		{"perf_regression", "", summary.VerdictFail, gated(t, seed, seedRun(0.93, 1300, 24), withNights)},
		{"no_baseline", "", summary.VerdictPass, gated(t, seed, seedRun(0.93, 1490, 20.2), noToken)},
		{"partial_failure", "", summary.VerdictError, gated(t, sweep, partial, sweepNights)},
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
			got := renderAnnotation(tt.sum, tt.trend)
			checkTables(t, got)
			checkGolden(t, "annotations/"+tt.name+".md", []byte(got))
		})
	}
}

// checkTables fails when a row of a markdown table has a different number
// of cells than its header: an unescaped | or a line break in a cell.
func checkTables(t *testing.T, md string) {
	t.Helper()
	want := -1
	for i, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			want = -1
			continue
		}
		cells := 0
		for j := 1; j < len(line); j++ {
			if line[j] == '|' && line[j-1] != '\\' {
				cells++
			}
		}
		if want < 0 {
			want = cells
			continue
		}
		if cells != want {
			t.Errorf("line %d has %d cells, its table %d:\n%s", i+1, cells, want, line)
		}
	}
}

func TestRenderAnnotationEscapesCells(t *testing.T) {
	t.Parallel()
	nasty := "a | b\r\nc\nd\re <script> `x`"
	s := summary.Summary{
		Recipe: "r-mi300x", GPU: "MI300X", NumGPUs: 1, TP: 1, Model: "m|odel", Verdict: summary.VerdictError,
		Phases:   []summary.Phase{{Name: "bench", Status: summary.StatusFailed, Error: nasty}},
		Bench:    []summary.BenchRun{{Name: "run|1", Status: summary.StatusFailed, Error: nasty}},
		Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusFailed, Error: nasty}},
		Gates: []summary.GateResult{{Kind: "regression", Subject: "run|1", Metric: "output_throughput", Bound: nasty,
			Verdict: summary.VerdictNoBaseline, Message: nasty}},
	}
	got := renderAnnotation(s, "")
	checkTables(t, got)
	const escaped = `a \| b c d e &lt;script&gt; 'x'`
	if n := strings.Count(got, escaped); n != 5 {
		t.Errorf("escaped text appears %d times, want 5 (failure, bench, accuracy, gate bound, no-baseline note):\n%s", n, got)
	}
	for _, bad := range []string{"\r", "<script>", "`x`", "run|1"} {
		if strings.Contains(got, bad) {
			t.Errorf("annotation contains %q unescaped:\n%s", bad, got)
		}
	}
}

func TestRenderAnnotationSize(t *testing.T) {
	t.Parallel()
	// Two-byte characters placed so that every clip length (a multiple of
	// 4) falls inside one unless the cut moves back.
	huge := "abc" + strings.Repeat("é|\n", 1<<20)
	t.Run("huge error messages are clipped", func(t *testing.T) {
		t.Parallel()
		s := summary.Summary{
			Recipe: "r-mi300x", GPU: "MI300X", NumGPUs: 1, TP: 1, Model: "m", Verdict: summary.VerdictError,
			Phases:   []summary.Phase{{Name: "serve", Status: summary.StatusFailed, Error: huge}},
			Bench:    []summary.BenchRun{{Name: "r", Status: summary.StatusFailed, Error: huge}},
			Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusFailed, Error: huge}},
			Gates:    []summary.GateResult{{Kind: "bench", Subject: "r", Metric: "m", Bound: huge, Verdict: summary.VerdictNoBaseline, Message: huge}},
		}
		got := renderAnnotation(s, "")
		if len(got) > 8<<10 {
			t.Errorf("annotation is %d bytes, want the error text clipped to a few KiB", len(got))
		}
		if !utf8.ValidString(got) {
			t.Error("annotation is not valid UTF-8: a clip split a character")
		}
		if !strings.Contains(got, "é\\| é\\|") || !strings.Contains(got, "…") {
			t.Errorf("annotation does not show the start of the error, clipped:\n%.2000s", got)
		}
		checkTables(t, got)
	})
	t.Run("many runs are cut at the limit", func(t *testing.T) {
		t.Parallel()
		s := summary.Summary{Recipe: "r-mi300x", GPU: "MI300X", NumGPUs: 1, TP: 1, Model: "m", Verdict: summary.VerdictError}
		for i := range 20000 {
			s.Bench = append(s.Bench, summary.BenchRun{Name: fmt.Sprintf("run-é-%d", i), Status: summary.StatusFailed, Error: strings.Repeat("é", 150)})
		}
		got := renderAnnotation(s, "")
		if len(got) >= 1<<20 {
			t.Errorf("annotation is %d bytes, want under Buildkite's 1 MiB limit", len(got))
		}
		if !strings.HasSuffix(got, "(cut at Buildkite's annotation size limit; see summary.json)\n") {
			t.Errorf("annotation ends %q, want the note that it was cut", got[len(got)-200:])
		}
		if !utf8.ValidString(got) {
			t.Error("annotation is not valid UTF-8: the cut split a character")
		}
	})
}

func TestAnnotationStyle(t *testing.T) {
	t.Parallel()
	noBaseline := []summary.GateResult{{Verdict: summary.VerdictPass}, {Verdict: summary.VerdictNoBaseline}}
	tests := []struct {
		verdict string
		gates   []summary.GateResult
		want    string
	}{
		{summary.VerdictPass, nil, "success"},
		{summary.VerdictPass, noBaseline, "warning"},
		{summary.VerdictFail, noBaseline, "error"},
		{summary.VerdictError, nil, "error"},
		{"", nil, "error"},
	}
	for _, tt := range tests {
		if got := annotationStyle(summary.Summary{Verdict: tt.verdict, Gates: tt.gates}); got != tt.want {
			t.Errorf("annotationStyle(verdict %q, %d gates) = %q, want %q", tt.verdict, len(tt.gates), got, tt.want)
		}
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"longer text", 6, "longer…"},
		{"héllo", 2, "h…"}, // byte 2 is inside é
		{"héllo", 3, "hé…"},
		{"ééé", 0, "…"},
	}
	for _, tt := range tests {
		if got := clip(tt.s, tt.n); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
