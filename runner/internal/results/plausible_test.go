package results_test

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

func TestCheckValue(t *testing.T) {
	t.Parallel()
	for _, v := range []float64{0, -1, 1e15, -1e15, 5548.6, 1e-300} {
		if err := results.CheckValue(v); err != nil {
			t.Errorf("CheckValue(%g) = %v, want nil", v, err)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1.7e308, -1.7e308, 1.0000001e15} {
		if err := results.CheckValue(v); !errors.Is(err, results.ErrImplausible) {
			t.Errorf("CheckValue(%g) = %v, want ErrImplausible", v, err)
		}
	}
}

// A vLLM bench result with a number no run measures is refused, naming
// the file and the key, whether the runner reads the key or not.
func TestParseBenchFileRefusesImplausible(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, key string }{
		{"typed throughput", strings.Replace(minimal("1", ""), `"output_throughput": 5.0`, `"output_throughput": 1.7976931348623157e308`, 1), "output_throughput"},
		{"typed latency", strings.Replace(minimal("1", ""), `"median_tpot_ms": 2`, `"median_tpot_ms": -1e300`, 1), "median_tpot_ms"},
		{"untyped number", minimal("1", `, "p90_ttft_ms": 1e16`), "p90_ttft_ms"},
		{"beyond a float64", minimal("1", `, "max_output_tokens_per_s": 1e309`), "max_output_tokens_per_s"},
		{"per-position element", minimal("1", `, "spec_decode_per_position_acceptance_rates": [0.5, 1e200]`), "spec_decode_per_position_acceptance_rates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "bench-x.json")
			testutil.WriteFile(t, path, tt.body)
			_, err := results.ParseBenchFile(path)
			if !errors.Is(err, results.ErrImplausible) {
				t.Fatalf("ParseBenchFile() error = %v, want ErrImplausible", err)
			}
			for _, want := range []string{path, `key "` + tt.key + `"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("ParseBenchFile() error = %q, want it to name %s", err, want)
				}
			}
		})
	}
}

// An lm_eval score or stderr no evaluation computes fails the task, named.
func TestLMEvalRefusesImplausible(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"exact_match,strict-match", "exact_match_stderr,strict-match"} {
		body := `{"results": {"gsm8k": {"exact_match,strict-match": 0.5, "exact_match_stderr,strict-match": 0.01, "alias": "gsm8k"}}}`
		body = strings.Replace(body, `"`+key+`": 0`, `"`+key+`": 1.7e308, "x": 0`, 1)
		r, err := results.ParseLMEval(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got := summary.FromLMEval("gsm8k", 0, r)
		if got.Status != summary.StatusFailed || !strings.Contains(got.Error, key) || !strings.Contains(got.Error, "1.7e308") {
			t.Errorf("%s: FromLMEval() = status %q error %q, want failed naming the key and value", key, got.Status, got.Error)
		}
		for k, v := range got.Metrics {
			if v > 1 {
				t.Errorf("%s: metric %s = %g carried", key, k, v)
			}
		}
		if v, ok := got.Stderr["exact_match,strict-match"]; ok && v > 1 {
			t.Errorf("%s: stderr %g carried", key, v)
		}
	}
}
