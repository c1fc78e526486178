package summary_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

func TestFromBench(t *testing.T) {
	t.Parallel()
	full := parseBench(t)

	// The bare minimum vLLM writes: no limit, no e2el, no speculation.
	bare, err := results.ParseBench(strings.NewReader(`{"date": "d", "backend": "openai", "model_id": "m",
	 "num_prompts": 10, "request_rate": 2, "max_concurrency": null, "duration": 5, "completed": 10,
	 "total_input_tokens": 100, "total_output_tokens": 50, "request_throughput": 2,
	 "output_throughput": 10, "total_token_throughput": 30,
	 "mean_ttft_ms": 1, "median_ttft_ms": 2, "std_ttft_ms": 3, "p99_ttft_ms": 4,
	 "mean_tpot_ms": 5, "median_tpot_ms": 6, "std_tpot_ms": 7, "p99_tpot_ms": 8,
	 "mean_itl_ms": 9, "median_itl_ms": 10, "std_itl_ms": 11, "p99_itl_ms": 12}`))
	if err != nil {
		t.Fatalf("ParseBench() error = %v", err)
	}

	tests := []struct {
		name    string
		b       results.BenchResult
		numGPUs int
		want    summary.BenchRun
	}{
		{
			name: "everything", b: full, numGPUs: 8,
			want: summary.BenchRun{
				Name: "run", Concurrency: 128, NumPrompts: 512, InputLen: 8192, OutputLen: 1024,
				Backend: "openai", Status: summary.StatusOK,
				RequestThroughput: 2.84, OutputThroughput: 2908.8, TotalTokenThroughput: 26179.2,
				OutputThroughputPerGPU: 363.6, TotalThroughputPerGPU: 3272.4,
				TTFT:       summary.Latency{Mean: 880.5, Median: 830.25, P99: 1400.75},
				TPOT:       summary.Latency{Mean: 43.5, Median: 42.25, P99: 58.5},
				ITL:        summary.Latency{Mean: 43.75, Median: 39.5, P99: 115.5},
				E2EL:       summary.Latency{Mean: 45000.5, Median: 44000.25, P99: 52000.75},
				SpecDecode: &summary.SpecDecode{AcceptanceRate: 62.5, AcceptanceLength: 2.875, PerPosition: []float64{0.8, 0.6, 0.475}},
				Metrics:    full.Numeric,
			},
		},
		{
			name: "bare result on an unknown GPU count", b: bare, numGPUs: 0,
			want: summary.BenchRun{
				Name: "run", NumPrompts: 10, Backend: "openai", Status: summary.StatusOK,
				RequestThroughput: 2, OutputThroughput: 10, TotalTokenThroughput: 30,
				TTFT:    summary.Latency{Mean: 1, Median: 2, P99: 4},
				TPOT:    summary.Latency{Mean: 5, Median: 6, P99: 8},
				ITL:     summary.Latency{Mean: 9, Median: 10, P99: 12},
				Metrics: bare.Numeric,
			},
		},
		{
			name: "per GPU on two GPUs", b: bare, numGPUs: 2,
			want: summary.BenchRun{
				Name: "run", NumPrompts: 10, Backend: "openai", Status: summary.StatusOK,
				RequestThroughput: 2, OutputThroughput: 10, TotalTokenThroughput: 30,
				OutputThroughputPerGPU: 5, TotalThroughputPerGPU: 15,
				TTFT:    summary.Latency{Mean: 1, Median: 2, P99: 4},
				TPOT:    summary.Latency{Mean: 5, Median: 6, P99: 8},
				ITL:     summary.Latency{Mean: 9, Median: 10, P99: 12},
				Metrics: bare.Numeric,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := summary.FromBench("run", tt.b, tt.numGPUs)
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("FromBench(run, b, %d) diff (-got +want):\n%s", tt.numGPUs, diff)
			}
		})
	}
}

func TestFromBenchCopiesMetrics(t *testing.T) {
	t.Parallel()
	b := parseBench(t)
	run := summary.FromBench("run", b, 1)
	run.Metrics["duration"] = -1
	run.SpecDecode.PerPosition[0] = -1
	if b.Numeric["duration"] != 180.25 || b.SpecDecodePerPositionAcceptanceRates[0] != 0.8 {
		t.Error("FromBench() shares maps or slices with its input")
	}
	if _, ok := run.Metrics["request_rate"]; ok {
		t.Error(`FromBench().Metrics has "request_rate" for an "inf" rate, which JSON cannot hold`)
	}
}

func TestFromLMEval(t *testing.T) {
	t.Parallel()
	r := parseLMEval(t)
	tests := []struct {
		name    string
		task    string
		fewshot int
		r       results.LMEvalResult
		want    summary.TaskResult
	}{
		{
			name: "found", task: "gsm8k", fewshot: 8, r: r,
			want: summary.TaskResult{
				Task: "gsm8k", NumFewshot: 5, Status: summary.StatusOK,
				Metrics: map[string]float64{
					"exact_match,strict-match":     0.9310083396512509,
					"exact_match,flexible-extract": 0.9355572403335861,
				},
				Stderr:  map[string]float64{"exact_match,strict-match": 0.006979311993957416},
				Samples: 1000,
			},
		},
		{
			name: "no n-shot or n-samples", task: "gsm8k", fewshot: 3,
			r: results.LMEvalResult{Tasks: map[string]results.LMEvalTask{
				"gsm8k": {SampleLen: 1319, Metrics: map[string]float64{"exact_match,strict-match": 0.5}},
			}},
			want: summary.TaskResult{
				Task: "gsm8k", NumFewshot: 3, Status: summary.StatusOK,
				Metrics: map[string]float64{"exact_match,strict-match": 0.5}, Samples: 1319,
			},
		},
		{
			name: "missing task", task: "mmlu", fewshot: 0, r: r,
			want: summary.TaskResult{
				Task: "mmlu", Status: summary.StatusFailed, Error: `task "mmlu" not in lm_eval results`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := summary.FromLMEval(tt.task, tt.fewshot, tt.r)
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("FromLMEval(%q, %d, r) diff (-got +want):\n%s", tt.task, tt.fewshot, diff)
			}
		})
	}
}
