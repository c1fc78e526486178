package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

// posted is one request the loopback dashboard received.
type posted struct {
	path    string
	headers http.Header
	size    int
	body    map[string]any
}

// loopbackDashboard accepts what perf-eval's endpoints accept: a POST of
// one JSON object with a bearer token, nothing else.
func loopbackDashboard(t *testing.T, token string) (*httptest.Server, func() []posted) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []posted
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		switch {
		case r.Method != http.MethodPost:
			t.Errorf("%s %s, want POST", r.Method, r.URL.Path)
		case r.Header.Get("Authorization") != "Bearer "+token:
			t.Errorf("%s: Authorization %q", r.URL.Path, r.Header.Get("Authorization"))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		case r.Header.Get("Content-Type") != "application/json":
			t.Errorf("%s: Content-Type %q", r.URL.Path, r.Header.Get("Content-Type"))
		}
		// One object per POST: an array is not a row.
		if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			t.Errorf("%s: body is not one JSON object: %.80s", r.URL.Path, data)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var body map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&body); err != nil {
			t.Errorf("%s: %v", r.URL.Path, err)
		}
		mu.Lock()
		got = append(got, posted{path: r.URL.Path, headers: r.Header.Clone(), size: len(data), body: body})
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []posted {
		mu.Lock()
		defer mu.Unlock()
		return append([]posted(nil), got...)
	}
}

// perfEvalRun is a night with two bench runs (one failed), an lm_eval
// task whose results and samples lie in dir, and a BFCL category.
func perfEvalRun(t *testing.T, dir string, samples int, sampleBytes int) summary.Summary {
	t.Helper()
	task := filepath.Join(dir, "gsm8k", "MiniMaxAI__MiniMax-M3-MXFP8")
	if err := os.MkdirAll(task, 0o755); err != nil {
		t.Fatal(err)
	}
	results := `{"results": {"gsm8k": {"exact_match,flexible-extract": 0.94, "alias": "gsm8k"}}, "n-shot": {"gsm8k": 5}}`
	if err := os.WriteFile(filepath.Join(task, "results_2026-11-29T03-00-00.json"), []byte(results), 0o644); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i := range samples {
		fmt.Fprintf(&lines, "{\"doc_id\": %d, \"resps\": [[%q]], \"exact_match\": 1.0}\n", i, strings.Repeat("x", sampleBytes))
	}
	lines.WriteString("not json\n")
	if err := os.WriteFile(filepath.Join(task, "samples_gsm8k_2026-11-29T03-00-00.jsonl"), []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return summary.Summary{
		Recipe: "minimax_m3-mi355x", Device: "mi355x", Model: "MiniMaxAI/MiniMax-M3-MXFP8", Image: "vllm/vllm-openai-rocm:nightly-abc1234",
		Precision: "mxfp8", TP: 4, DP: 2, NumGPUs: 8, VLLMCommit: "abc1234", Finished: time.Date(2026, 11, 29, 3, 4, 5, 0, time.UTC),
		Verdict: summary.VerdictPass,
		Bench: []summary.BenchRun{
			{Name: "8k-conc-128", Status: summary.StatusOK, Concurrency: 128, InputLen: 8192, OutputLen: 1024,
				OutputThroughput: 8000, TotalTokenThroughput: 72000,
				SpecDecode: &summary.SpecDecode{AcceptanceRate: 60, AcceptanceLength: 2.8},
				Metrics:    map[string]float64{"mean_ttft_ms": 250, "median_tpot_ms": 20, "p99_itl_ms": 40, "std_e2el_ms": 0, "mean_tpot_ms": 0, "duration": 120, "output_throughput": 8000}},
			{Name: "8k-conc-256", Status: summary.StatusFailed, Concurrency: 256},
		},
		Accuracy: []summary.TaskResult{
			{Task: "gsm8k", NumFewshot: 5, Status: summary.StatusOK, Metrics: map[string]float64{"exact_match,flexible-extract": 0.94},
				Entry: "gsm8k", File: "gsm8k/MiniMaxAI__MiniMax-M3-MXFP8/results_2026-11-29T03-00-00.json"},
			{Task: "bfcl_simple_python", Status: summary.StatusOK, Metrics: map[string]float64{"acc": 0.9}, Entry: "bfcl/simple_python"},
			{Task: "aime25", Status: summary.StatusFailed, Error: "lm_eval exited 1"},
		},
	}
}

// TestPerfEvalSinkLoopback posts a night to a loopback dashboard and
// checks every field perf-eval's lib/ingest_perf.py and lib/ingest.py
// send: the perf row, the results payloads, the sample batches.
func TestPerfEvalSinkLoopback(t *testing.T) {
	t.Parallel()
	const token = "bearer-token-1"
	srv, received := loopbackDashboard(t, token)
	dir := t.TempDir()
	// Three samples of 1.6 MiB: two fit in 4 MiB, the third needs a second batch.
	s := perfEvalRun(t, dir, 3, 1600<<10)
	env := map[string]string{
		"BUILDKITE_BUILD_ID": "0190b1e4-1111", "BUILDKITE_BUILD_NUMBER": "812", "BUILDKITE_BUILD_URL": "https://buildkite.com/o/p/builds/812",
		"BUILDKITE_BRANCH": "main", "BUILDKITE_COMMIT": "deadbeef", "BUILDKITE_PIPELINE_SLUG": "perf", "NIGHTLY": "1",
		"BUILDKITE_JOB_ID": "not sent",
	}
	sink := &PerfEvalSink{PerfURL: srv.URL + "/perf", EvalURL: srv.URL + "/eval", Token: token, Client: srv.Client(), Dir: dir,
		Getenv: func(k string) string { return env[k] }}
	sent, err := sink.Post(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "skipped samples that are not JSON: line 4") {
		t.Errorf("Post() error = %v, want the malformed sample line named", err)
	}
	got := received()
	if sent != len(got) || len(got) != 5 {
		t.Fatalf("sent %d, received %d posts, want 5: one perf row, two results, two sample batches", sent, len(got))
	}

	num := func(v float64) json.Number { return json.Number(fmt.Sprint(v)) }
	wantPerf := map[string]any{
		"date": "2026-11-29 03:04:05", "device": "mi355x", "conc": num(128), "image": "vllm/vllm-openai-rocm:nightly-abc1234",
		"model": "MiniMaxAI/MiniMax-M3-MXFP8", "framework": "vllm", "precision": "mxfp8",
		"spec_decoding": "true", "disagg": "false", "is_multinode": "false", "dp_attention": "false",
		"isl": num(8192), "osl": num(1024), "tp": num(8), "ep": num(1),
		// TP 4 × DP 2: throughput over 8.
		"tput_per_gpu": num(9000), "output_tput_per_gpu": num(1000), "input_tput_per_gpu": num(8000),
		"nightly": true,
		// *_ms keys in seconds, without the suffix; TPOT's interactivity.
		"mean_ttft": num(0.25), "median_tpot": num(0.02), "p99_itl": num(0.04), "std_e2el": num(0), "mean_tpot": num(0),
		"median_intvty": num(50), "mean_intvty": num(0),
	}
	var results, batches []posted
	for _, p := range got {
		switch {
		case p.path == "/perf":
			if diff := cmp.Diff(p.body, wantPerf); diff != "" {
				t.Errorf("perf row diff (-got +want):\n%s", diff)
			}
			if p.headers.Get("X-Source") != "perf-eval" {
				t.Errorf("perf row X-Source = %q, want perf-eval", p.headers.Get("X-Source"))
			}
		case p.path == "/eval" && p.body["kind"] == "results":
			results = append(results, p)
		case p.path == "/eval" && p.body["kind"] == "samples":
			batches = append(batches, p)
		default:
			t.Errorf("unexpected post to %s: %v", p.path, p.body["kind"])
		}
	}
	meta := func(task string) map[string]any {
		return map[string]any{"workload": "minimax_m3-mi355x", "task": task,
			"buildkite_build_id": "0190b1e4-1111", "buildkite_build_number": "812", "buildkite_build_url": "https://buildkite.com/o/p/builds/812",
			"buildkite_branch": "main", "buildkite_commit": "deadbeef", "buildkite_pipeline_slug": "perf",
			"image": "vllm/vllm-openai-rocm:nightly-abc1234", "vllm_commit": "abc1234", "nightly": true}
	}
	resultsFile := filepath.ToSlash(filepath.Join(dir, s.Accuracy[0].File))
	wantResults := []map[string]any{
		with(meta("gsm8k"), map[string]any{"kind": "results", "source_file": resultsFile,
			"data": map[string]any{"results": map[string]any{"gsm8k": map[string]any{"exact_match,flexible-extract": num(0.94), "alias": "gsm8k"}}, "n-shot": map[string]any{"gsm8k": num(5)}}}),
		with(meta("bfcl_simple_python"), map[string]any{"kind": "results", "source_file": filepath.ToSlash(filepath.Join(dir, "bfcl/simple_python")),
			"data": map[string]any{
				"results":  map[string]any{"bfcl_simple_python": map[string]any{"acc,none": num(0.9), "acc_stderr,none": num(0), "alias": "bfcl_simple_python"}},
				"configs":  map[string]any{"bfcl_simple_python": map[string]any{"task": "bfcl_simple_python", "num_fewshot": num(0)}},
				"versions": map[string]any{"bfcl_simple_python": num(1)},
				"n-shot":   map[string]any{"bfcl_simple_python": num(0)},
				"config":   map[string]any{"model": "local-completions", "model_args": "model=MiniMaxAI/MiniMax-M3-MXFP8"}}}),
	}
	var gotResults []map[string]any
	for _, p := range results {
		gotResults = append(gotResults, p.body)
	}
	if diff := cmp.Diff(gotResults, wantResults); diff != "" {
		t.Errorf("results payloads diff (-got +want):\n%s", diff)
	}
	samplesFile := strings.Replace(resultsFile, "results_2026-11-29T03-00-00.json", "samples_gsm8k_2026-11-29T03-00-00.jsonl", 1)
	var ids []string
	for i, p := range batches {
		if p.size > SamplesBatchBytes {
			t.Errorf("sample batch %d is %d bytes, over %d", i, p.size, SamplesBatchBytes)
		}
		samples, _ := p.body["samples"].([]any)
		body := with(p.body, nil)
		delete(body, "samples")
		if diff := cmp.Diff(body, with(meta("gsm8k"), map[string]any{"kind": "samples", "source_file": samplesFile})); diff != "" {
			t.Errorf("sample batch %d fields diff (-got +want):\n%s", i, diff)
		}
		var n []string
		for _, sm := range samples {
			n = append(n, string(sm.(map[string]any)["doc_id"].(json.Number)))
		}
		ids = append(ids, strings.Join(n, ","))
	}
	if diff := cmp.Diff(ids, []string{"0,1", "2"}); diff != "" {
		t.Errorf("sample batches' doc ids diff (-got +want):\n%s", diff)
	}
}

// TestPerfEvalSinkOptions: without NIGHTLY the rows carry no nightly tag,
// without speculation spec_decoding is "false", and with NoSamples only
// results go to the eval endpoint.
func TestPerfEvalSinkOptions(t *testing.T) {
	t.Parallel()
	const token = "bearer-token-2"
	srv, received := loopbackDashboard(t, token)
	dir := t.TempDir()
	s := perfEvalRun(t, dir, 2, 10)
	s.Bench[0].SpecDecode = nil
	sink := &PerfEvalSink{PerfURL: srv.URL + "/perf", EvalURL: srv.URL + "/eval", Token: token, Client: srv.Client(), Dir: dir,
		Getenv: func(string) string { return "" }, NoSamples: true}
	if _, err := sink.Post(context.Background(), s); err != nil {
		t.Fatalf("Post() = %v", err)
	}
	var kinds []string
	for _, p := range received() {
		if _, ok := p.body["nightly"]; ok {
			t.Errorf("%s: a row of an unscheduled build is tagged nightly", p.path)
		}
		if p.path == "/perf" {
			if p.body["spec_decoding"] != "false" {
				t.Errorf("spec_decoding = %v without speculation", p.body["spec_decoding"])
			}
			kinds = append(kinds, "perf")
			continue
		}
		kinds = append(kinds, p.body["kind"].(string)+":"+p.body["task"].(string))
	}
	if diff := cmp.Diff(kinds, []string{"perf", "results:gsm8k", "results:bfcl_simple_python"}); diff != "" {
		t.Errorf("posts diff (-got +want):\n%s", diff)
	}
}
