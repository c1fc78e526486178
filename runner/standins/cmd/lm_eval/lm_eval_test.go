package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/paired"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
	"github.com/google/go-cmp/cmp"
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

func runLMEval(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr testutil.SyncBuffer
	code := run(t.Context(), args, func(k string) string { return env[k] }, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func topKeys(t *testing.T, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.Token()
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

// expectedAccuracy is what the server's hash-chosen answers should score.
func expectedAccuracy(n int, accuracy float64) float64 {
	return expectedAccuracyN(defaultDocs, n, accuracy)
}

func expectedAccuracyN(total, n int, accuracy float64) float64 {
	right := 0
	for _, d := range makeDocs(total, testSeed)[:n] {
		if openai.IsAnsweredCorrectly(d.Question, accuracy) {
			right++
		}
	}
	return float64(right) / float64(n)
}

func TestEvaluateAgainstServer(t *testing.T) {
	t.Parallel()
	const accuracy = 0.8
	srv := startServer(t, openai.Config{Model: "org/Model-1B", ServedModelNames: []string{"org/Model-1B"}, Accuracy: accuracy})
	out := t.TempDir()
	code, stdout, stderr := runLMEval(t, nil, "--model", "local-completions",
		"--model_args", "model=org/Model-1B,base_url="+srv.URL()+"/v1/completions,num_concurrent=4,max_retries=3,tokenized_requests=False",
		"--tasks", "gsm8k", "--num_fewshot", "5", "--log_samples", "--output_path", out)
	if code != 0 {
		t.Fatalf("lm_eval exit = %d; stderr:\n%s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(out, "org__Model-1B", "results_*.json"))
	if len(files) != 1 {
		t.Fatalf("results files = %v, want one under the sanitized model name", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("testdata/lm_eval_results_example.json")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(topKeys(t, data), topKeys(t, example)); diff != "" {
		t.Errorf("top-level keys diff (-got +want):\n%s", diff)
	}
	if !bytes.HasPrefix(data, []byte("{\n  \"results\": {\n    \"gsm8k\": {\n      \"name\": \"gsm8k\",")) {
		t.Errorf("results file is not indent=2 JSON: %.80s", data)
	}

	var res struct {
		Results map[string]map[string]any `json:"results"`
		NSamp   map[string]map[string]int `json:"n-samples"`
		Config  struct {
			ModelArgs map[string]any `json:"model_args"`
			Limit     any            `json:"limit"`
		} `json:"config"`
		ModelNameSanitized string `json:"model_name_sanitized"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	g := res.Results["gsm8k"]
	want := expectedAccuracy(defaultDocs, accuracy)
	if math.Abs(want-accuracy) > 0.03 {
		t.Fatalf("dataset gives %.2f at accuracy %.2f; its score spread is off", want, accuracy)
	}
	for _, key := range []string{"exact_match,strict-match", "exact_match,flexible-extract"} {
		if got := g[key]; got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	wantStderr := math.Sqrt(want*(1-want)*defaultDocs/(defaultDocs-1)) / math.Sqrt(defaultDocs)
	if got, _ := g["exact_match_stderr,strict-match"].(float64); math.Abs(got-wantStderr) > 1e-12 {
		t.Errorf("stderr = %v, want %v", got, wantStderr)
	}
	if diff := cmp.Diff(res.Config.ModelArgs, map[string]any{
		"model": "org/Model-1B", "base_url": srv.URL() + "/v1/completions", "num_concurrent": 4.0, "max_retries": 3.0, "tokenized_requests": false,
	}); diff != "" {
		t.Errorf("config.model_args diff (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(res.NSamp["gsm8k"], map[string]int{"original": 50, "effective": 50}); diff != "" {
		t.Errorf("n-samples diff (-got +want):\n%s", diff)
	}

	sampleFiles, _ := filepath.Glob(filepath.Join(out, "org__Model-1B", "samples_gsm8k_*.jsonl"))
	if len(sampleFiles) != 1 || strings.TrimPrefix(filepath.Base(sampleFiles[0]), "samples_gsm8k_") != strings.TrimPrefix(filepath.Base(files[0]), "results_")+"l" {
		t.Fatalf("samples files = %v, want one sharing the results date id", sampleFiles)
	}
	f, _ := os.Open(sampleFiles[0])
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	lines, right := 0, 0.0
	for sc.Scan() {
		var s struct {
			DocID      int               `json:"doc_id"`
			Filter     string            `json:"filter"`
			Resps      [][]string        `json:"resps"`
			Filtered   []string          `json:"filtered_resps"`
			ExactMatch float64           `json:"exact_match"`
			Arguments  map[string]any    `json:"arguments"`
			Doc        map[string]string `json:"doc"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("sample line %d: %v", lines, err)
		}
		if lines == 0 && (s.DocID != 0 || s.Filter != "strict-match" || !strings.Contains(s.Resps[0][0], "#### ") || strings.Count(s.Arguments["gen_args_0"].(map[string]any)["arg_0"].(string), "Question:") != 6) {
			t.Errorf("first sample = %+v, want doc 0, strict-match, a '####' answer and a 5-shot prompt", s)
		}
		right += s.ExactMatch
		lines++
	}
	if lines != 2*defaultDocs || right != 2*want*defaultDocs {
		t.Errorf("samples: %d lines scoring %v, want %d lines scoring %v", lines, right, 2*defaultDocs, 2*want*defaultDocs)
	}
	// The paired test reads these files: every line is one of its
	// samples, and a run paired with itself agrees on every document.
	ps, err := paired.ReadFile(sampleFiles[0])
	if err != nil || len(ps) != 2*defaultDocs {
		t.Fatalf("paired.ReadFile(samples) = %d samples, %v; want %d", len(ps), err, 2*defaultDocs)
	}
	self, err := paired.Compare(ps, ps, paired.Options{Filter: "flexible-extract"})
	if err != nil || self.Pairs != defaultDocs || self.AgreeAnswer != defaultDocs || self.SpecScore != want {
		t.Errorf("paired.Compare(samples, samples) = %+v, %v; want %d identical pairs scoring %v", self, err, defaultDocs, want)
	}
	if !strings.Contains(stdout, "|gsm8k|      3|flexible-extract|     5|exact_match|↑  |") {
		t.Errorf("stdout lacks the results table:\n%s", stdout)
	}
}

func TestJSONOutputPath(t *testing.T) {
	t.Parallel()
	srv := startServer(t, openai.Config{Model: "m", Accuracy: 1})
	out := filepath.Join(t.TempDir(), "res.json")
	code, _, stderr := runLMEval(t, map[string]string{envDocs: "7"}, "run", "--model", "local-completions",
		"--model_args", "model=m,base_url="+srv.URL()+"/v1/completions,tokenizer_backend=None",
		"--tasks", "gsm8k", "--num_fewshot", "0", "--output_path", out)
	if code != 0 {
		t.Fatalf("lm_eval exit = %d; stderr:\n%s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "res_*.json"))
	if len(files) != 1 {
		t.Fatalf("results files = %v, want res_<date>.json", files)
	}
	data, _ := os.ReadFile(files[0])
	var res struct {
		Results map[string]map[string]any `json:"results"`
		NSamp   map[string]map[string]int `json:"n-samples"`
		Config  map[string]any            `json:"config"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	got := []any{res.Results["gsm8k"]["exact_match,strict-match"], res.NSamp["gsm8k"]["original"], res.NSamp["gsm8k"]["effective"], res.Config["limit"]}
	if diff := cmp.Diff(got, []any{1.0, 7, 7, nil}); diff != "" {
		t.Errorf("accuracy, original, effective, limit diff (-got +want):\n%s", diff)
	}
	if bytes.Contains(data, []byte("tokenizer_pad_token")) {
		t.Error("results record tokenizer tokens although tokenizer_backend is None")
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	dying := startServer(t, openai.Config{Model: "m", Accuracy: 1, Faults: openai.Faults{DieAfterRequests: 3}})
	healthy := startServer(t, openai.Config{Model: "m", Accuracy: 1})
	modelArgs := func(s *openai.Server) string { return "model=m,base_url=" + s.URL() + "/v1/completions,max_retries=2" }
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"unknown task", nil, []string{"--model", "local-completions", "--model_args", modelArgs(healthy), "--tasks", "gsm8k,mmlu"}, 1, "ValueError: Tasks not found: mmlu."},
		{"unknown model type", nil, []string{"--model", "hf", "--model_args", "pretrained=x", "--tasks", "gsm8k"}, 1, "Attempted to load model 'hf'"},
		{"samples without output", nil, []string{"--model", "local-completions", "--tasks", "gsm8k", "--log_samples"}, 1, "Specify --output_path if providing --log_samples"},
		{"unknown flag", nil, []string{"--tasks", "gsm8k", "--frobnicate"}, 2, "lm-eval run: error: unrecognized arguments: --frobnicate"},
		{"server dies", nil, []string{"--model", "local-completions", "--model_args", modelArgs(dying), "--tasks", "gsm8k"}, 1, "RuntimeError: API request failed after 2 attempts"},
		{"bad knob", map[string]string{envDocs: "0"}, []string{"--model", "local-completions", "--tasks", "gsm8k"}, 1, "invalid FAKE_LMEVAL_DOCS"},
		// Real forms the runner never uses fail rather than run as
		// something else.
		{"chat model", nil, []string{"--model", "local-chat-completions", "--model_args", modelArgs(healthy), "--tasks", "gsm8k"}, 1, "Attempted to load model 'local-chat-completions'"},
		{"limit", nil, []string{"--model", "local-completions", "--model_args", modelArgs(healthy), "--tasks", "gsm8k", "--limit", "7"}, 1, "--limit is not supported by this stand-in"},
		{"chat template", nil, []string{"--model", "local-completions", "--tasks", "gsm8k", "--apply_chat_template"}, 1, "--apply_chat_template is not supported"},
		{"gen_kwargs", nil, []string{"--model", "local-completions", "--tasks", "gsm8k", "--gen_kwargs", "temperature=0.5"}, 1, "--gen_kwargs is not supported"},
		{"JSON model_args", nil, []string{"--model", "local-completions", "--tasks", "gsm8k", "--model_args", `{"model": "m"}`}, 1, "JSON model_args are not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := runLMEval(t, tt.env, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("lm_eval %q = %d, stderr:\n%s\nwant %d containing %q", tt.args, code, stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		resp, strict, flexible string
	}{
		{" 17 + 25 = 42. The answer is 42.\n#### 42", "42", "42"},
		{"The answer is $1,200.", "[invalid]", "$1,200."},
		{"#### -3.5 and then 7", "-3.5", "7"},
		{"no numbers", "[invalid]", "[invalid]"},
	}
	for _, tt := range tests {
		got := []string{filters[0].apply(tt.resp), filters[1].apply(tt.resp)}
		if diff := cmp.Diff(got, []string{tt.strict, tt.flexible}); diff != "" {
			t.Errorf("filters(%q) diff (-got +want):\n%s", tt.resp, diff)
		}
	}
	matches := []struct {
		pred, ref string
		want      float64
	}{
		{"42", "17 + 25 = 42\n#### 42", 1},
		{"$1,200.", "x\n#### 1200", 1},
		{"43", "#### 42", 0},
		{"[invalid]", "#### 42", 0},
	}
	for _, m := range matches {
		if got := exactMatch(m.pred, m.ref); got != m.want {
			t.Errorf("exactMatch(%q, %q) = %v, want %v", m.pred, m.ref, got, m.want)
		}
	}
}

func TestParseKeyValues(t *testing.T) {
	t.Parallel()
	o, err := parseKeyValues("model=a/b,num_concurrent=64,tokenized_requests=False,tokenizer_backend=None,timeout=6000,temp=0.5")
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for _, k := range o.Keys() {
		v, _ := o.Get(k)
		got = append(got, k, v)
	}
	want := []any{"model", "a/b", "num_concurrent", 64, "tokenized_requests", false, "tokenizer_backend", nil, "timeout", 6000, "temp", 0.5}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("parseKeyValues diff (-got +want):\n%s", diff)
	}
	if _, err := parseKeyValues("novalue"); err == nil {
		t.Error("parseKeyValues(novalue) error = nil")
	}
}

func TestDatasetTracksAccuracy(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10, 50, 200} {
		for _, acc := range []float64{0.3, 0.75, 0.9} {
			if got := expectedAccuracyN(n, n, acc); math.Abs(got-acc) > 0.06 {
				t.Errorf("%d docs at accuracy %.2f score %.3f", n, acc, got)
			}
		}
	}
	docs := makeDocs(200, testSeed)
	seen := map[string]bool{}
	for _, d := range docs {
		if seen[d.Question] {
			t.Fatalf("duplicate question %q", d.Question)
		}
		seen[d.Question] = true
	}
	if diff := cmp.Diff(makeDocs(20, testSeed), makeDocs(20, testSeed)); diff != "" {
		t.Errorf("makeDocs is not deterministic (-first +second):\n%s", diff)
	}
}
