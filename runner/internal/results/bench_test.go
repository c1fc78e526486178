package results_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/results"
)

// ignoreRaw leaves the lossless fields to the tests written for them.
var ignoreRaw = cmpopts.IgnoreFields(results.BenchResult{}, "Raw", "Order")

// exampleBench is the parsed form of the reference vllm_bench_example.json.
var exampleBench = results.BenchResult{
	Date:                 "20260821-143015",
	Backend:              "openai",
	EndpointType:         "openai",
	ModelID:              "meta-llama/Llama-3.1-8B-Instruct",
	NumPrompts:           200,
	RequestRate:          math.Inf(1),
	MaxConcurrency:       ptr(16),
	Duration:             41.5237,
	Completed:            200,
	TotalInputTokens:     204800,
	TotalOutputTokens:    25600,
	RequestThroughput:    4.816526465608797,
	OutputThroughput:     616.5153875979261,
	TotalTokenThroughput: 5548.638488381334,
	TTFT:                 results.LatencyStats{Mean: 118.42, Median: 97.31, Std: 61.77, P99: 402.18},
	TPOT:                 results.LatencyStats{Mean: 23.51, Median: 23.12, Std: 2.04, P99: 29.87},
	ITL:                  results.LatencyStats{Mean: 57.63, Median: 55.9, Std: 14.02, P99: 98.44},

	SpecDecodeAcceptanceRate:             ptr(50.0),
	SpecDecodeAcceptanceLength:           ptr(2.5),
	SpecDecodePerPositionAcceptanceRates: []float64{0.72, 0.49, 0.29},

	Numeric: map[string]float64{
		"num_prompts": 200, "burstiness": 1, "max_concurrency": 16, "duration": 41.5237,
		"completed": 200, "failed": 0, "total_input_tokens": 204800, "total_output_tokens": 25600,
		"request_throughput": 4.816526465608797, "output_throughput": 616.5153875979261,
		"total_token_throughput": 5548.638488381334, "max_output_tokens_per_s": 712,
		"max_concurrent_requests": 16, "rtfx": 0,
		"spec_decode_acceptance_rate": 50, "spec_decode_acceptance_length": 2.5,
		"spec_decode_num_drafts": 10240, "spec_decode_draft_tokens": 30720, "spec_decode_accepted_tokens": 15360,
		"mean_ttft_ms": 118.42, "median_ttft_ms": 97.31, "std_ttft_ms": 61.77, "p99_ttft_ms": 402.18,
		"mean_tpot_ms": 23.51, "median_tpot_ms": 23.12, "std_tpot_ms": 2.04, "p99_tpot_ms": 29.87,
		"mean_itl_ms": 57.63, "median_itl_ms": 55.9, "std_itl_ms": 14.02, "p99_itl_ms": 98.44,
	},
}

func TestParseBenchFiles(t *testing.T) {
	t.Parallel()
	examples := examplesDir(t)
	tests := []struct {
		name string
		path string
		want results.BenchResult
	}{
		{
			name: "reference example",
			path: filepath.Join(examples, "vllm_bench_example.json"),
			want: exampleBench,
		},
		{
			name: "append-result JSON lines takes the last object",
			path: filepath.Join("testdata", "bench_append.jsonl"),
			want: results.BenchResult{
				Date: "20260821-141000", Backend: "openai", EndpointType: "openai",
				ModelID: "openai/gpt-oss-120b", NumPrompts: 512, RequestRate: math.Inf(1), MaxConcurrency: ptr(128),
				Duration: 180.25, Completed: 512, TotalInputTokens: 4194304, TotalOutputTokens: 524288,
				RequestThroughput: 2.84, OutputThroughput: 2908.7, TotalTokenThroughput: 26178.5,
				TTFT: results.LatencyStats{Mean: 880.1, Median: 830.2, Std: 110.3, P99: 1400.4},
				TPOT: results.LatencyStats{Mean: 43.1, Median: 42.2, Std: 3.1, P99: 58.4},
				ITL:  results.LatencyStats{Mean: 43.5, Median: 39.6, Std: 9.1, P99: 115.8},
				Numeric: map[string]float64{
					"num_prompts": 512, "burstiness": 1, "max_concurrency": 128, "duration": 180.25,
					"completed": 512, "failed": 0, "total_input_tokens": 4194304, "total_output_tokens": 524288,
					"request_throughput": 2.84, "output_throughput": 2908.7, "total_token_throughput": 26178.5,
					"mean_ttft_ms": 880.1, "median_ttft_ms": 830.2, "std_ttft_ms": 110.3, "p99_ttft_ms": 1400.4,
					"mean_tpot_ms": 43.1, "median_tpot_ms": 42.2, "std_tpot_ms": 3.1, "p99_tpot_ms": 58.4,
					"mean_itl_ms": 43.5, "median_itl_ms": 39.6, "std_itl_ms": 9.1, "p99_itl_ms": 115.8,
				},
			},
		},
		{
			// Older vLLM: no "failed", endpoint_type only, a finite rate,
			// no concurrency limit, e2el selected, and a Python NaN.
			name: "older layout without failed",
			path: filepath.Join("testdata", "bench_v0.11_no_failed.json"),
			want: results.BenchResult{
				Date: "20251002-031500", Backend: "vllm", EndpointType: "vllm",
				ModelID: "Qwen/Qwen3-8B", NumPrompts: 100, RequestRate: 4,
				Duration: 30, Completed: 100, TotalInputTokens: 102400, TotalOutputTokens: 12800,
				RequestThroughput: 3.3333333333333335, OutputThroughput: 426.6666666666667, TotalTokenThroughput: 3840,
				TTFT: results.LatencyStats{Mean: 50.5, Median: 48, Std: 5.25, P99: 70},
				TPOT: results.LatencyStats{Mean: 12.5, Median: 12, Std: 1.5, P99: 16},
				ITL:  results.LatencyStats{Mean: 12.25, Median: 11.75, Std: 2, P99: 20},
				E2EL: &results.LatencyStats{Mean: 1650, Median: 1600, Std: 120, P99: 2000},
				Numeric: map[string]float64{
					"num_prompts": 100, "request_rate": 4, "burstiness": 1, "duration": 30,
					"completed": 100, "total_input_tokens": 102400, "total_output_tokens": 12800,
					"request_throughput": 3.3333333333333335, "output_throughput": 426.6666666666667,
					"total_token_throughput": 3840, "max_output_tokens_per_s": 512, "max_concurrent_requests": 9,
					"mean_ttft_ms": 50.5, "median_ttft_ms": 48, "std_ttft_ms": 5.25, "p99_ttft_ms": 70,
					"mean_tpot_ms": 12.5, "median_tpot_ms": 12, "std_tpot_ms": 1.5, "p99_tpot_ms": 16,
					"mean_itl_ms": 12.25, "median_itl_ms": 11.75, "std_itl_ms": 2, "p99_itl_ms": 20,
					"mean_e2el_ms": 1650, "median_e2el_ms": 1600, "std_e2el_ms": 120, "p99_e2el_ms": 2000,
					"p90_e2el_ms": 1800,
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := results.ParseBenchFile(tt.path)
			if err != nil {
				t.Fatalf("ParseBenchFile(%q) error = %v", tt.path, err)
			}
			if diff := cmp.Diff(got, tt.want, ignoreRaw); diff != "" {
				t.Errorf("ParseBenchFile(%q) diff (-got +want):\n%s", tt.path, diff)
			}
		})
	}
}

func TestParseBenchKeepsEveryKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(examplesDir(t), "vllm_bench_example.json")
	got, err := results.ParseBenchFile(path)
	if err != nil {
		t.Fatalf("ParseBenchFile(%q) error = %v", path, err)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(readFile(t, path), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rawKeys(got.Raw), rawKeys(want)); diff != "" {
		t.Errorf("Raw keys diff (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(string(got.Raw["latencies"]), "[\n    3.1021,\n    3.2447\n  ]"); diff != "" {
		t.Errorf("Raw[latencies] diff (-got +want):\n%s", diff)
	}
	wantOrder := []string{"date", "endpoint_type", "backend", "label", "model_id"}
	if diff := cmp.Diff(got.Order[:len(wantOrder)], wantOrder); diff != "" {
		t.Errorf("Order prefix diff (-got +want):\n%s", diff)
	}
	if n, m := len(got.Order), len(want); n != m {
		t.Errorf("len(Order) = %d, want %d", n, m)
	}
}

func rawKeys(m map[string]json.RawMessage) map[string]bool {
	keys := make(map[string]bool, len(m))
	for k := range m {
		keys[k] = true
	}
	return keys
}

// minimalBench is the smallest object ParseBench accepts.
const minimalBench = `{"date": "20260101-000000", "backend": "openai", "model_id": "m", "num_prompts": 2,
 "request_rate": %s, "max_concurrency": 1, "duration": 1.5, "completed": 2,
 "total_input_tokens": 20, "total_output_tokens": 10, "request_throughput": 1.0,
 "output_throughput": 5.0, "total_token_throughput": 15.0,
 "mean_ttft_ms": 1, "median_ttft_ms": 1, "std_ttft_ms": 0, "p99_ttft_ms": 1,
 "mean_tpot_ms": 2, "median_tpot_ms": 2, "std_tpot_ms": 0, "p99_tpot_ms": 2,
 "mean_itl_ms": 3, "median_itl_ms": 3, "std_itl_ms": 0, "p99_itl_ms": 3%s}`

func minimal(rate, extra string) string {
	return strings.Replace(strings.Replace(minimalBench, "%s", rate, 1), "%s", extra, 1)
}

func TestParseBenchFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		check func(results.BenchResult) any
		want  any
	}{
		{"inf rate", minimal(`"inf"`, ""), func(b results.BenchResult) any { return math.IsInf(b.RequestRate, 1) }, true},
		{"finite rate", minimal("2.5", ""), func(b results.BenchResult) any { return b.RequestRate }, 2.5},
		{"inf rate is not numeric", minimal(`"inf"`, ""), func(b results.BenchResult) any { _, ok := b.Numeric["request_rate"]; return ok }, false},
		{"absent failed is zero", minimal("1", ""), func(b results.BenchResult) any { return b.Failed }, 0},
		{"failed read", minimal("1", `, "failed": 3`), func(b results.BenchResult) any { return b.Failed }, 3},
		{"float-written int", minimal("1", `, "failed": 3.0`), func(b results.BenchResult) any { return b.Failed }, 3},
		{"null concurrency", strings.Replace(minimal("1", ""), `"max_concurrency": 1`, `"max_concurrency": null`, 1),
			func(b results.BenchResult) any { return b.MaxConcurrency == nil }, true},
		{"absent concurrency", strings.Replace(minimal("1", ""), `"max_concurrency": 1,`, ``, 1),
			func(b results.BenchResult) any { return b.MaxConcurrency == nil }, true},
		{"backend fills endpoint_type", minimal("1", ""), func(b results.BenchResult) any { return b.EndpointType }, "openai"},
		{"partial e2el is not typed", minimal("1", `, "mean_e2el_ms": 4, "p99_e2el_ms": 5`),
			func(b results.BenchResult) any { return b.E2EL == nil }, true},
		{"partial e2el stays numeric", minimal("1", `, "mean_e2el_ms": 4, "p99_e2el_ms": 5`),
			func(b results.BenchResult) any { return b.Numeric["p99_e2el_ms"] }, 5.0},
		{"NaN e2el is not typed", minimal("1", `, "mean_e2el_ms": NaN, "median_e2el_ms": 1, "std_e2el_ms": 1, "p99_e2el_ms": 1`),
			func(b results.BenchResult) any { return b.E2EL == nil }, true},
		{"Python infinities read as null", minimal("1", `, "x": Infinity, "y": -Infinity, "s": "NaN Infinity"`),
			func(b results.BenchResult) any {
				return []string{string(b.Raw["x"]), string(b.Raw["y"]), string(b.Raw["s"])}
			},
			[]string{"null", "null", `"NaN Infinity"`}},
		{"metadata strings kept raw", minimal("1", `, "input_len": "8192"`),
			func(b results.BenchResult) any { return string(b.Raw["input_len"]) }, `"8192"`},
		{"booleans are not numeric", minimal("1", `, "flag": true`),
			func(b results.BenchResult) any { _, ok := b.Numeric["flag"]; return ok }, false},
		{"duplicate key keeps the last value", minimal("1", `, "completed": 1`),
			func(b results.BenchResult) any { return b.Completed }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := results.ParseBench(strings.NewReader(tt.input))
			if err != nil {
				t.Fatalf("ParseBench() error = %v", err)
			}
			if diff := cmp.Diff(tt.check(got), tt.want); diff != "" {
				t.Errorf("ParseBench() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseBenchErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		input   string
		wantIs  error
		wantMsg []string
	}{
		{"empty", "", nil, []string{"no JSON value"}},
		{"not an object", "[1, 2]", nil, []string{"expected a JSON object"}},
		{"broken second line", minimal("1", "") + "\n{\"date\": ", nil, []string{"value 2"}},
		{"missing keys are all named", `{"date": "x", "backend": "b"}`, results.ErrMissingKey,
			[]string{`missing key "model_id"`, `missing key "duration"`, `missing key "p99_itl_ms"`}},
		{"neither backend nor endpoint_type", strings.Replace(minimal("1", ""), `"backend": "openai",`, "", 1),
			results.ErrMissingKey, []string{`missing key "backend" (or "endpoint_type")`}},
		{"wrong type", strings.Replace(minimal("1", ""), `"completed": 2`, `"completed": "2"`, 1), nil,
			[]string{`key "completed": want a whole number, got a string`}},
		{"fractional count", strings.Replace(minimal("1", ""), `"completed": 2`, `"completed": 2.5`, 1), nil,
			[]string{`key "completed"`}},
		{"null throughput", strings.Replace(minimal("1", ""), `"output_throughput": 5.0`, `"output_throughput": NaN`, 1), nil,
			[]string{`key "output_throughput": want a number, got null`}},
		{"bad rate", minimal(`"fast"`, ""), nil, []string{`key "request_rate"`}},
		{"bad per-position", minimal("1", `, "spec_decode_per_position_acceptance_rates": [0.5, "x"]`), nil,
			[]string{`element 1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := results.ParseBench(strings.NewReader(tt.input))
			checkError(t, "ParseBench()", err, tt.wantIs, tt.wantMsg...)
		})
	}
}

func TestParseBenchFileNamesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bench-x.json")
	testutil.WriteFile(t, path, `{"date": 1}`)
	_, err := results.ParseBenchFile(path)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("ParseBenchFile(%q) error = %v, want it to name the file", path, err)
	}
}

func TestBenchMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(examplesDir(t), "vllm_bench_example.json")
	orig := readFile(t, path)
	b, err := results.ParseBench(bytes.NewReader(orig))
	if err != nil {
		t.Fatalf("ParseBench() error = %v", err)
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("json.Marshal() error = %v", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, orig); err != nil {
		t.Fatal(err)
	}
	// Same keys, same order, same values: the file is reproduced.
	if diff := cmp.Diff(string(out), compact.String()); diff != "" {
		t.Errorf("MarshalJSON() diff (-got +want):\n%s", diff)
	}
	var back results.BenchResult
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("json.Unmarshal() error = %v", err)
	}
	if diff := cmp.Diff(back, b, ignoreRaw); diff != "" {
		t.Errorf("round trip diff (-got +want):\n%s", diff)
	}
}

func TestBenchMarshalLayout(t *testing.T) {
	t.Parallel()
	b, err := results.ParseBench(strings.NewReader(minimal(`"inf"`, `, "zz_custom": 1, "aa_custom": "x"`)))
	if err != nil {
		t.Fatalf("ParseBench() error = %v", err)
	}
	b.Completed = 1 // typed fields win over Raw
	b.Failed = 2
	b.E2EL = &results.LatencyStats{Mean: 4, Median: 4, Std: 0, P99: 4}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("json.Marshal() error = %v", err)
	}
	// endpoint_type (absent, backend present) stays absent; failed (absent
	// but now non-zero) and e2el go where serve.py writes them; unchanged
	// values keep their spelling; unknown keys keep file order.
	want := `{"date":"20260101-000000","backend":"openai","model_id":"m","num_prompts":2,` +
		`"request_rate":"inf","max_concurrency":1,"duration":1.5,"completed":1,"failed":2,` +
		`"total_input_tokens":20,"total_output_tokens":10,"request_throughput":1.0,"output_throughput":5.0,` +
		`"total_token_throughput":15.0,"mean_ttft_ms":1,"median_ttft_ms":1,"std_ttft_ms":0,"p99_ttft_ms":1,` +
		`"mean_tpot_ms":2,"median_tpot_ms":2,"std_tpot_ms":0,"p99_tpot_ms":2,` +
		`"mean_itl_ms":3,"median_itl_ms":3,"std_itl_ms":0,"p99_itl_ms":3,` +
		`"mean_e2el_ms":4,"median_e2el_ms":4,"std_e2el_ms":0,"p99_e2el_ms":4,"zz_custom":1,"aa_custom":"x"}`
	if diff := cmp.Diff(string(out), want); diff != "" {
		t.Errorf("MarshalJSON() diff (-got +want):\n%s", diff)
	}
}

func TestBenchMarshalWithoutRaw(t *testing.T) {
	t.Parallel()
	b := results.BenchResult{
		Date: "20260101-000000", Backend: "openai", ModelID: "m", NumPrompts: 1, RequestRate: 2,
		Duration: 1, Completed: 1, Raw: map[string]json.RawMessage{"zeta": []byte(`"z"`), "alpha": []byte("1")},
	}
	out, err := json.Marshal(b)
	if err != nil {
		t.Fatalf("json.Marshal() error = %v", err)
	}
	back, err := results.ParseBench(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("ParseBench(MarshalJSON()) error = %v", err)
	}
	if diff := cmp.Diff(back.Order[:3], []string{"date", "endpoint_type", "backend"}); diff != "" {
		t.Errorf("Order prefix diff (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(back.Order[len(back.Order)-2:], []string{"alpha", "zeta"}); diff != "" {
		t.Errorf("unknown keys diff (-got +want):\n%s", diff)
	}
}

func TestBenchMarshalRejectsNonFinite(t *testing.T) {
	t.Parallel()
	for _, b := range []results.BenchResult{
		{Duration: math.NaN()},
		{RequestRate: math.Inf(-1)},
		{SpecDecodePerPositionAcceptanceRates: []float64{0.5, math.Inf(1)}},
	} {
		if out, err := json.Marshal(b); err == nil {
			t.Errorf("json.Marshal() = %s, want an error", out)
		}
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		completed  int
		failed     int
		numPrompts int
		wantErr    string
	}{
		{"all completed", 200, 0, 200, ""},
		{"short", 198, 0, 200, "completed 198 of 200 prompts"},
		{"failures", 200, 2, 200, "2 requests failed"},
		{"both", 190, 10, 200, "completed 190 of 200 prompts, 10 requests failed"},
		{"more than asked", 201, 0, 200, "completed 201 of 200 prompts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := results.BenchResult{Completed: tt.completed, Failed: tt.failed}
			err := b.Valid(tt.numPrompts)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Valid(%d) error = %v, want nil", tt.numPrompts, err)
				}
				return
			}
			if !errors.Is(err, results.ErrIncomplete) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Valid(%d) error = %v, want ErrIncomplete containing %q", tt.numPrompts, err, tt.wantErr)
			}
		})
	}
}

func TestValidAbsentFailed(t *testing.T) {
	t.Parallel()
	b, err := results.ParseBenchFile(filepath.Join("testdata", "bench_v0.11_no_failed.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Valid(100); err != nil {
		t.Errorf("Valid(100) error = %v, want nil", err)
	}
}

func FuzzParseBench(f *testing.F) {
	f.Add(minimal(`"inf"`, ""))
	f.Add(minimal("3", `, "failed": 1, "spec_decode_per_position_acceptance_rates": [0.5, 0.25]`))
	f.Add(minimal("1", "") + "\n" + minimal("2", `, "x": NaN`))
	f.Add(`{"a": "\"NaN\\", "b": -Infinity}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, input string) {
		b, err := results.ParseBench(strings.NewReader(input))
		if err != nil {
			return
		}
		out, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("json.Marshal(ParseBench(%q)) error = %v", input, err)
		}
		back, err := results.ParseBench(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("ParseBench(%s) error = %v", out, err)
		}
		if diff := cmp.Diff(back, b, ignoreRaw); diff != "" {
			t.Errorf("round trip of %q diff (-got +want):\n%s", input, diff)
		}
	})
}
