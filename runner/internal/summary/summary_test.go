package summary_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

var cest = time.FixedZone("CEST", 2*60*60)

func ptr[T any](v T) *T { return &v }

// benchJSON is a vLLM result as written with --metadata input_len/output_len,
// e2el stats and speculative decoding.
const benchJSON = `{"date": "20260821-143015", "endpoint_type": "openai", "backend": "openai", "label": null,
 "model_id": "openai/gpt-oss-120b", "tokenizer_id": "openai/gpt-oss-120b", "num_prompts": 512,
 "input_len": "8192", "output_len": "1024", "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 128,
 "duration": 180.25, "completed": 512, "failed": 0, "total_input_tokens": 4194304, "total_output_tokens": 524288,
 "request_throughput": 2.84, "request_goodput": null, "output_throughput": 2908.8, "total_token_throughput": 26179.2,
 "latencies": [1.0, 2.0], "spec_decode_acceptance_rate": 62.5, "spec_decode_acceptance_length": 2.875,
 "spec_decode_per_position_acceptance_rates": [0.8, 0.6, 0.475],
 "mean_ttft_ms": 880.5, "median_ttft_ms": 830.25, "std_ttft_ms": 110.0, "p99_ttft_ms": 1400.75,
 "mean_tpot_ms": 43.5, "median_tpot_ms": 42.25, "std_tpot_ms": 3.0, "p99_tpot_ms": 58.5,
 "mean_itl_ms": 43.75, "median_itl_ms": 39.5, "std_itl_ms": 9.0, "p99_itl_ms": 115.5,
 "mean_e2el_ms": 45000.5, "median_e2el_ms": 44000.25, "std_e2el_ms": 900.0, "p99_e2el_ms": 52000.75}`

const lmEvalJSON = `{
 "results": {"gsm8k": {"name": "gsm8k", "alias": "gsm8k", "sample_len": 1319,
   "exact_match,strict-match": 0.9310083396512509, "exact_match_stderr,strict-match": 0.006979311993957416,
   "exact_match,flexible-extract": 0.9355572403335861, "exact_match_stderr,flexible-extract": "N/A"}},
 "n-shot": {"gsm8k": 5},
 "n-samples": {"gsm8k": {"original": 1319, "effective": 1000}}
}`

func parseBench(t *testing.T) results.BenchResult {
	t.Helper()
	b, err := results.ParseBench(strings.NewReader(benchJSON))
	if err != nil {
		t.Fatalf("ParseBench() error = %v", err)
	}
	return b
}

func parseLMEval(t *testing.T) results.LMEvalResult {
	t.Helper()
	r, err := results.ParseLMEval(strings.NewReader(lmEvalJSON))
	if err != nil {
		t.Fatalf("ParseLMEval() error = %v", err)
	}
	return r
}

// fullSummary sets every field, so the golden file shows the whole schema.
func fullSummary(t *testing.T) summary.Summary {
	t.Helper()
	start := time.Date(2026, 8, 21, 16, 0, 0, 0, cest)
	at := func(minutes int) time.Time { return start.Add(time.Duration(minutes) * time.Minute) }

	run := summary.FromBench("8k-in-1k-out-c128", parseBench(t), 8)
	run.Config = "8k-in-1k-out"
	run.Repetitions = 3
	run.File = "bench-8k-in-1k-out-c128.json"
	run.RepetitionValues = map[string][]float64{"output_throughput": {2901.5, 2908.8, 2915.0}}
	failedRun := summary.BenchRun{
		Name: "8k-in-1k-out-c256", Config: "8k-in-1k-out", Concurrency: 256, NumPrompts: 1024,
		InputLen: 8192, OutputLen: 1024, Repetitions: 3, Backend: "openai", Status: summary.StatusFailed,
		Error: "incomplete benchmark run: completed 1000 of 1024 prompts, 24 requests failed",
	}
	task := summary.FromLMEval("gsm8k", 5, parseLMEval(t))
	task.File = "lm_eval/openai__gpt-oss-120b/results_2026-08-21T14-40-00.123456.json"

	return summary.Summary{
		Recipe: "gpt_oss_120b-mi355x", GPU: "MI355X", Device: "AMD Instinct MI355X", NumGPUs: 8, TP: 1, DP: 8,
		Precision: "fp8", Model: "openai/gpt-oss-120b", Image: "vllm/vllm-openai-rocm:nightly-abc1234",
		VLLMCommit: "abc1234def",
		Buildkite: &summary.BuildkiteInfo{
			BuildID: "0190f3a2-1111-2222-3333-444455556666", BuildNumber: "4242",
			BuildURL: "https://buildkite.com/benchkite/nightly/builds/4242", JobID: "0190f3a2-aaaa-bbbb-cccc-ddddeeeeffff",
			StepKey: "gpt_oss_120b-mi355x", Branch: "main", BaselineBranch: "main", Commit: "0123456789abcdef", Source: "schedule",
		},
		Started:  start,
		Finished: at(50),
		Verdict:  summary.VerdictFail,
		Phases: []summary.Phase{
			{Name: summary.PhaseServe, Status: summary.StatusOK, Started: at(0), Finished: at(50)},
			{Name: summary.PhaseReady, Status: summary.StatusOK, Started: at(0), Finished: at(6)},
			{Name: summary.PhaseBench, Status: summary.StatusFailed, Started: at(6), Finished: at(40), Error: "1 of 2 runs failed"},
			{Name: summary.PhaseLMEval, Status: summary.StatusOK, Started: at(40), Finished: at(48)},
			{Name: summary.PhaseGate, Status: summary.StatusOK, Started: at(48), Finished: at(49)},
			{Name: summary.PhasePublish, Status: summary.StatusSkipped},
		},
		Bench:    []summary.BenchRun{run, failedRun},
		Accuracy: []summary.TaskResult{task},
		Gates: []summary.GateResult{
			{
				Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: "exact_match,strict-match",
				Value: ptr(0.9310083396512509), Bound: "baseline 0.930 ± 0.020", Baseline: ptr(0.93), DeltaPct: ptr(0.108),
				Verdict: summary.VerdictPass,
			},
			{
				Kind: summary.GateRegression, Subject: "8k-in-1k-out-c128", Metric: "output_throughput",
				Value: ptr(2908.8), Bound: "≥ -5% vs median of 5 nights (3100.0)", Baseline: ptr(3100.0), DeltaPct: ptr(-6.17),
				Verdict: summary.VerdictFail, Message: "output_throughput 2908.8 is 6.17% below the 5-night median <3100.0>",
				Detector: &summary.Detector{Nights: 30, Used: 29, Outliers: 1, Repetitions: 3, RepMin: 2901.5, RepMax: 2915, Tonight: 2908.4,
					NoiseCVPct: 1.1, FloorPct: 5, NoiseThresholdPct: 2.6, ThresholdPct: 5, WorsePct: 6.17, Rule: "single-night", Why: "flagged: tonight 2908 is 6.2% worse"},
				ChangePoint: &summary.ChangePoint{Found: true, P: 1e-6, Before: 3100, After: 2908.4,
					LastGood: summary.NightRef{Build: 4241, Value: 3095, ImageDigest: "sha256:" + strings.Repeat("a", 64), VLLMCommit: "9876fed"},
					FirstBad: summary.NightRef{Build: 4242, Tonight: true, Value: 2908.4, VLLMCommit: "abc1234def"},
					Bisect:   []string{"git -C vllm rev-list --first-parent --reverse 9876fed..abc1234def"}},
			},
			{
				Kind: summary.GateBench, Subject: "8k-in-1k-out-c256", Metric: "p99_ttft_ms", Bound: "<= 2000",
				Verdict: summary.VerdictSkipped, Message: "run failed",
			},
			{
				Kind: summary.GateRegression, Subject: "8k-in-1k-out-c128", Metric: "p99_itl_ms",
				Value: ptr(115.5), Bound: "≤ +10% vs median of 5 nights", Verdict: summary.VerdictNoBaseline,
				Message: "2 of 5 nights available",
			},
		},
	}
}

func encode(t *testing.T, s summary.Summary) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := summary.Encode(&buf, s); err != nil {
		t.Fatalf("Encode() error = %v", err)
	}
	return buf.Bytes()
}

func TestEncodeGolden(t *testing.T) {
	t.Parallel()
	got := encode(t, fullSummary(t))
	path := filepath.Join("testdata", "summary.golden.json")
	testutil.Golden(t, path, got)
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	s := fullSummary(t)
	got, err := summary.Read(bytes.NewReader(encode(t, s)))
	if err != nil {
		t.Fatalf("Read(Encode()) error = %v", err)
	}
	want := s
	want.SchemaVersion = summary.SchemaVersion
	// Times come back in UTC; Equal compares the instant.
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Read(Encode()) diff (-got +want):\n%s", diff)
	}
	if again := encode(t, got); !bytes.Equal(again, encode(t, s)) {
		t.Errorf("Encode(Read(Encode(s))) differs from Encode(s):\n%s", cmp.Diff(string(again), string(encode(t, s))))
	}
}

func TestEncodeEmptySummary(t *testing.T) {
	t.Parallel()
	got := string(encode(t, summary.Summary{Recipe: "r", Verdict: summary.VerdictError}))
	want := `{
  "schema_version": 1,
  "recipe": "r",
  "gpu": "",
  "num_gpus": 0,
  "model": "",
  "verdict": "error",
  "phases": [],
  "bench": [],
  "accuracy": [],
  "gates": []
}
`
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Encode(empty) diff (-got +want):\n%s", diff)
	}
}

func TestEncodeLeavesInputAlone(t *testing.T) {
	t.Parallel()
	started := time.Date(2026, 8, 21, 16, 0, 0, 0, cest)
	s := summary.Summary{Phases: []summary.Phase{{Name: summary.PhaseServe, Started: started}}}
	encode(t, s)
	if got := s.Phases[0].Started.Location(); got != cest {
		t.Errorf("Encode() changed the caller's phase time zone to %v", got)
	}
}

func TestEncodeRejectsNonFinite(t *testing.T) {
	t.Parallel()
	s := summary.Summary{Gates: []summary.GateResult{{Value: ptr(math.NaN())}}}
	if err := summary.Encode(&bytes.Buffer{}, s); err == nil {
		t.Error("Encode(NaN value) error = nil, want an error")
	}
}

func TestReadRejectsSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		input   string
		wantIs  error
		wantMsg string
	}{
		{"newer", `{"schema_version": 2, "recipe": "r", "bench": "changed meaning"}`, summary.ErrUnsupportedSchema,
			"file has version 2, this build reads up to 1"},
		{"missing", `{"recipe": "r"}`, summary.ErrUnsupportedSchema, "schema_version missing"},
		{"zero", `{"schema_version": 0}`, summary.ErrUnsupportedSchema, "version 0"},
		{"not JSON", `schema_version: 1`, nil, "read summary"},
		{"wrong type", `{"schema_version": 1, "num_gpus": "eight"}`, nil, "num_gpus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := summary.Read(strings.NewReader(tt.input))
			if err == nil {
				t.Fatal("Read() error = nil, want an error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Read() error = %v, want errors.Is %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Read() error = %q, want it to contain %q", err, tt.wantMsg)
			}
		})
	}
}

func TestReadIgnoresAddedFields(t *testing.T) {
	t.Parallel()
	got, err := summary.Read(strings.NewReader(`{"schema_version": 1, "recipe": "r", "added_later": {"x": 1}}`))
	if err != nil {
		t.Fatalf("Read() error = %v", err)
	}
	if diff := cmp.Diff(got, summary.Summary{SchemaVersion: 1, Recipe: "r"}); diff != "" {
		t.Errorf("Read() diff (-got +want):\n%s", diff)
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := fullSummary(t)
	if err := summary.Write(path, s); err != nil {
		t.Fatalf("Write() error = %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(got), string(encode(t, s))); diff != "" {
		t.Errorf("Write() content diff (-got +want):\n%s", diff)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o644 {
		t.Errorf("Write() mode = %v, want 0644", mode)
	}
	back, err := summary.ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile() error = %v", err)
	}
	if back.Recipe != s.Recipe {
		t.Errorf("ReadFile().Recipe = %q, want %q", back.Recipe, s.Recipe)
	}
	assertOnlyFile(t, dir, "summary.json")
}

func TestWriteFailureLeavesNoTempFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	bad := summary.Summary{Gates: []summary.GateResult{{Value: ptr(math.Inf(1))}}}
	if err := summary.Write(path, bad); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Write(Inf) error = %v, want an error naming %s", err, path)
	}
	// A rename onto a directory fails after the temp file was written.
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := summary.Write(path, summary.Summary{}); err == nil {
		t.Error("Write(onto a directory) error = nil, want an error")
	}
	assertOnlyFile(t, dir, "summary.json")
}

func TestWriteMissingDir(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "absent", "summary.json")
	if err := summary.Write(path, summary.Summary{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Write(%q) error = %v, want os.ErrNotExist", path, err)
	}
}

func assertOnlyFile(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff(names, []string{name}); diff != "" {
		t.Errorf("files in %s diff (-got +want):\n%s", dir, diff)
	}
}

func TestReadFileNamesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "summary.json")
	if err := os.WriteFile(path, []byte(`{"schema_version": 9}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := summary.ReadFile(path)
	if !errors.Is(err, summary.ErrUnsupportedSchema) || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadFile(%q) error = %v, want ErrUnsupportedSchema naming the file", path, err)
	}
}

func TestPhase(t *testing.T) {
	t.Parallel()
	s := summary.Summary{Phases: []summary.Phase{
		{Name: summary.PhaseServe, Status: summary.StatusOK},
		{Name: summary.PhaseBench},
	}}
	p := s.Phase(summary.PhaseBench)
	if p == nil {
		t.Fatal("Phase(bench) = nil, want the bench phase")
	}
	p.Status = summary.StatusFailed
	if got := s.Phases[1].Status; got != summary.StatusFailed {
		t.Errorf("after setting Phase(bench).Status, Phases[1].Status = %q, want %q", got, summary.StatusFailed)
	}
	if got := s.Phase(summary.PhaseGate); got != nil {
		t.Errorf("Phase(gate) = %+v, want nil", got)
	}
}
