package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/testutil"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/pyjson"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func startServer(t *testing.T, cfg openai.Config) *openai.Server {
	t.Helper()
	s := openai.NewServer(cfg)
	if err := s.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// orderedKeys returns the top-level keys of a JSON object in file order.
func orderedKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func runBenchCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut testutil.SyncBuffer
	code = run(t.Context(), append([]string{"bench", "serve"}, args...), envFunc(nil), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestBenchEndToEnd(t *testing.T) {
	t.Parallel()
	srv := startServer(t, openai.Config{Model: "org/Model-1B", NumSpeculativeTokens: 3, TokenDelay: time.Millisecond})
	dir := t.TempDir()
	code, stdout, stderr := runBenchCmd(t,
		"--backend", "openai", "--base-url", srv.URL(), "--endpoint", "/v1/completions", "--model", "org/Model-1B",
		"--dataset-name", "random", "--random-input-len", "32", "--random-output-len", "12", "--ignore-eos",
		"--num-prompts", "16", "--max-concurrency", "4", "--num-warmups", "2", "--temperature", "0",
		"--trust-remote-code", "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99",
		"--seed", "7", "--save-result", "--result-dir", dir, "--result-filename", "r.json",
		"--metadata", "recipe=demo", "gpu=H200")
	if code != 0 {
		t.Fatalf("bench exit = %d; stderr:\n%s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("\n")) || !bytes.HasPrefix(data, []byte(`{"date": "`)) {
		t.Errorf("result is not a one-line json.dump: %.80s", data)
	}

	// The core keys of the reference file come in the same order.
	example, err := os.ReadFile("testdata/vllm_bench_example.json")
	if err != nil {
		t.Fatal(err)
	}
	got := orderedKeys(t, data)
	var inExample []string
	for _, k := range got {
		if slices.Contains(orderedKeys(t, example), k) {
			inExample = append(inExample, k)
		}
	}
	if diff := cmp.Diff(inExample, orderedKeys(t, example)); diff != "" {
		t.Errorf("reference keys in result, in order, diff (-got +want):\n%s", diff)
	}
	for _, k := range []string{"recipe", "gpu", "p50_ttft_ms", "mean_e2el_ms", "p99_e2el_ms"} {
		if !slices.Contains(got, k) {
			t.Errorf("result lacks key %q", k)
		}
	}
	for _, k := range []string{"errors", "ttfts", "generated_texts"} {
		if slices.Contains(got, k) {
			t.Errorf("result has %q without --save-detailed", k)
		}
	}

	var res map[string]any
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	wantValues := map[string]any{
		"backend": "openai", "endpoint_type": "openai", "model_id": "org/Model-1B", "tokenizer_id": "org/Model-1B",
		"num_prompts": 16.0, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4.0, "label": nil,
		"completed": 16.0, "failed": 0.0, "total_input_tokens": 16 * 32.0, "total_output_tokens": 16 * 12.0,
		"request_goodput": nil, "rtfx": 0.0, "recipe": "demo", "gpu": "H200", "spec_decode_draft_tokens": 3 * res["spec_decode_num_drafts"].(float64),
	}
	gotValues := map[string]any{}
	for k := range wantValues {
		gotValues[k] = res[k]
	}
	if diff := cmp.Diff(gotValues, wantValues); diff != "" {
		t.Errorf("result values diff (-got +want):\n%s", diff)
	}
	// serve.py counts the requests active in the busiest second: all 16
	// of a run shorter than a second.
	if n := res["max_concurrent_requests"].(float64); n != 16 {
		t.Errorf("max_concurrent_requests = %v, want all 16 requests in one second", n)
	}
	if tpot := res["mean_tpot_ms"].(float64); tpot < 0.5 {
		t.Errorf("mean_tpot_ms = %v, want at least the 1 ms token delay", tpot)
	}
	// Drafts are per token after the first: 16 requests × 11 tokens.
	drafts, accepted := res["spec_decode_num_drafts"].(float64), res["spec_decode_accepted_tokens"].(float64)
	if drafts+accepted < 16*11 || drafts+accepted > 16*(11+3) || len(res["spec_decode_per_position_acceptance_rates"].([]any)) != 3 {
		t.Errorf("spec decode drafts=%v accepted=%v rates=%v", drafts, accepted, res["spec_decode_per_position_acceptance_rates"])
	}
	if rate := res["spec_decode_acceptance_rate"].(float64); math.Abs(rate-100*accepted/(3*drafts)) > 1e-9 {
		t.Errorf("spec_decode_acceptance_rate = %v, want percent of accepted/draft tokens", rate)
	}

	for _, want := range []string{
		"============ Serving Benchmark Result ============\n",
		"Successful requests:                     16        \n",
		"Maximum request concurrency:             4         \n",
		"Total generated tokens:                  192       \n",
		"---------------Speculative Decoding---------------\n",
		"  Position 2:",
		"P50 TTFT (ms):",
		"----------------End-to-end Latency----------------\n",
		"\n==================================================\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if stats := srv.Stats(); stats.Requests != 18 {
		t.Errorf("server saw %d requests, want 16 + 2 warm-ups", stats.Requests)
	}
}

func TestBenchChatAndDetailed(t *testing.T) {
	t.Parallel()
	srv := startServer(t, openai.Config{Model: "m"})
	dir := t.TempDir()
	code, stdout, stderr := runBenchCmd(t, "--backend", "openai-chat", "--endpoint", "/v1/chat/completions",
		"--base-url", srv.URL(), "--dataset-name", "random", "--random-input-len", "8", "--random-output-len", "5",
		"--num-prompts", "3", "--request-rate", "200", "--save-result", "--save-detailed", "--result-dir", dir)
	if code != 0 {
		t.Fatalf("bench exit = %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "First model name: m, first model id: m") || !strings.Contains(stdout, "Request rate configured (RPS):           200.00") {
		t.Errorf("stdout lacks model discovery or rate line:\n%s", stdout)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "openai-chat-200.0qps-m-*.json"))
	if len(matches) != 1 {
		t.Fatalf("result files = %v, want the default name", matches)
	}
	data, _ := os.ReadFile(matches[0])
	var res struct {
		Errors     []string    `json:"errors"`
		OutputLens []int       `json:"output_lens"`
		ITLs       [][]float64 `json:"itls"`
		Completed  int         `json:"completed"`
		Rate       float64     `json:"request_rate"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	want := struct {
		Errors     []string
		OutputLens []int
		ITLCount   int
		Completed  int
		Rate       float64
	}{[]string{"", "", ""}, []int{5, 5, 5}, 3, 3, 200}
	got := struct {
		Errors     []string
		OutputLens []int
		ITLCount   int
		Completed  int
		Rate       float64
	}{res.Errors, res.OutputLens, len(res.ITLs), res.Completed, res.Rate}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("detailed result diff (-got +want):\n%s", diff)
	}
	for _, itl := range res.ITLs {
		// The role chunk counts as the first token, as in vLLM's client.
		if len(itl) != 5 {
			t.Errorf("itls entry has %d gaps, want 5 (role chunk + 5 tokens)", len(itl))
		}
	}
}

func TestBenchCountsFailedRequests(t *testing.T) {
	t.Parallel()
	srv := startServer(t, openai.Config{Model: "m", Faults: openai.Faults{DieAfterRequests: 5}})
	dir := t.TempDir()
	code, stdout, stderr := runBenchCmd(t, "--base-url", srv.URL(), "--model", "m", "--random-input-len", "4",
		"--random-output-len", "3", "--num-prompts", "10", "--max-concurrency", "1", "--save-result",
		"--save-detailed", "--result-filename", filepath.Join(dir, "r.json"))
	if code != 0 {
		t.Fatalf("bench exit = %d (vLLM reports failures in the file, not the exit code); stderr:\n%s", code, stderr)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "r.json"))
	var res struct {
		Completed int      `json:"completed"`
		Failed    int      `json:"failed"`
		Errors    []string `json:"errors"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	transport := 0
	for _, e := range res.Errors {
		if strings.Contains(e, "aiohttp.client_exceptions") {
			transport++
		}
	}
	if res.Completed != 5 || res.Failed != 5 || transport != 5 {
		t.Errorf("completed=%d failed=%d errors=%q; want 5, 5 and transport errors for the rest", res.Completed, res.Failed, res.Errors)
	}
	if !strings.Contains(stdout, "Failed requests during benchmark run detected (capping to 10):") {
		t.Errorf("stdout lacks the failure report:\n%s", stdout)
	}
}

func TestBenchErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"unknown flag", []string{"--model", "m", "--bogus", "1"}, 2, "vllm bench serve: error: unrecognized arguments: --bogus 1"},
		{"bad int", []string{"--num-prompts", "many"}, 2, "argument --num-prompts: invalid int value: 'many'"},
		{"bad backend", []string{"--backend", "tgi2"}, 2, "argument --backend: invalid choice: 'tgi2'"},
		{"unreachable", []string{"--base-url", "http://127.0.0.1:1", "--model", "m"}, 1, "Failed to fetch models from server at http://127.0.0.1:1/v1/models"},
		{"random with path", []string{"--dataset-path", "/x"}, 1, "ValueError: Cannot use 'random' dataset with --dataset-path."},
		{"chat endpoint", []string{"--backend", "openai-chat"}, 1, "ValueError: OpenAI Chat Completions API URL must end with 'chat/completions'."},
		{"zero concurrency", []string{"--max-concurrency", "0"}, 1, "--max-concurrency must be greater than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runBenchCmd(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("bench %q = %d, stderr %q; want %d containing %q", tt.args, code, stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
}

// TestSummaryFormat prints the reference run's numbers and compares the
// block with the reference summary byte for byte.
func TestSummaryFormat(t *testing.T) {
	t.Parallel()
	conc := 16
	var out bytes.Buffer
	r := &report{w: &out, o: benchOptions{maxConcurrency: &conc, requestRate: math.Inf(1), percentileMetrics: []string{"ttft", "tpot", "itl"}, percentiles: []float64{99}}}
	r.header(benchMetrics{
		completed: 200, totalInput: 204800, totalOutput: 25600, requestThroughput: 4.816526465608797,
		outputThroughput: 616.5153875979261, totalTokenThroughput: 5548.638488381334,
		maxOutputTokensPerSecond: 712, maxConcurrentRequests: 16,
	}, 41.5237, false)
	res := pyjson.NewObject()
	r.metric(res, "ttft", "TTFT", "Time to First Token", summary{mean: 118.42, median: 97.31, std: 61.77, percentiles: []float64{402.18}})
	r.metric(res, "tpot", "TPOT", "Time per Output Token (excl. 1st token)", summary{mean: 23.51, median: 23.12, std: 2.04, percentiles: []float64{29.87}})
	r.metric(res, "itl", "ITL", "Inter-token Latency", summary{mean: 57.63, median: 55.9, std: 14.02, percentiles: []float64{98.44}})
	r.metric(res, "e2el", "E2EL", "End-to-end Latency", summary{percentiles: []float64{1}}) // not selected
	r.spec(&specStats{drafts: 10240, draftTokens: 30720, accepted: 15360, acceptanceRate: 50, acceptanceLength: 2.5, perPosition: []float64{0.72, 0.49, 0.29}})
	fmt.Fprintln(&out, strings.Repeat("=", 50))

	want, err := os.ReadFile("testdata/vllm_bench_summary_example.txt")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(out.String(), string(want)); diff != "" {
		t.Errorf("summary diff (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(res.Keys(), []string{
		"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
		"mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
		"mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms",
	}); diff != "" {
		t.Errorf("metric keys diff (-got +want):\n%s", diff)
	}
}

func TestNumpyCompatibleStats(t *testing.T) {
	t.Parallel()
	xs := []float64{4, 1, 3, 2}
	// Values from numpy 2.x for the same input.
	got := []float64{mean(xs), median(xs), std(xs), percentile(xs, 99), percentile(xs, 25), percentile(nil, 99), mean(nil)}
	want := []float64{2.5, 2.5, 1.118033988749895, 3.97, 1.75, 0, 0}
	if diff := cmp.Diff(got, want, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("stats diff (-got +want):\n%s", diff)
	}
}

func TestPeaks(t *testing.T) {
	t.Parallel()
	outs := []requestOutput{
		{success: true, startTime: 0, ttft: 0.1, itl: []float64{0.1, 0.1}, latency: 0.3},
		{success: true, startTime: 0.3, ttft: 0.1, itl: []float64{0.2}, latency: 1.5},
		{success: true, startTime: 0.2, ttft: 1.0, latency: 1.0},
	}
	tokens, conc := peaks(outs)
	// Tokens at 0.1, 0.2, 0.3, 0.4, 0.6 fall in second 0, one at 1.2 in
	// second 1. Every request is active in second 0, the second and
	// third also in second 1: serve.py counts per second, not overlaps.
	if tokens != 5 || conc != 3 {
		t.Errorf("peaks() = %v, %v; want 5, 3", tokens, conc)
	}
	outs = append(outs, requestOutput{success: true, startTime: 2.5, ttft: 0.1, latency: 0.2})
	if _, conc := peaks(outs); conc != 3 {
		t.Errorf("peaks() with a late request: concurrency %v, want 3", conc)
	}
}

func TestArrivalDelays(t *testing.T) {
	t.Parallel()
	if d := arrivalDelays(3, math.Inf(1), 1, 0); slices.ContainsFunc(d, func(x time.Duration) bool { return x != 0 }) {
		t.Errorf("infinite rate delays = %v, want all zero", d)
	}
	for _, burst := range []float64{1, 0.5, 3} {
		d := arrivalDelays(50, 10, burst, 1)
		if got := d[len(d)-1]; got < 4999*time.Millisecond || got > 5001*time.Millisecond {
			t.Errorf("burstiness %v: last arrival = %v, want n/rate = 5s", burst, got)
		}
		if !slices.IsSorted(d) {
			t.Errorf("burstiness %v: arrivals not increasing", burst)
		}
	}
}
