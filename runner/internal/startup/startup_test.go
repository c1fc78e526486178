package startup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

func ptr(v float64) *float64 { return &v }

// The start-ups vLLM 0.26.0 logged on an H200 (testdata/vllm-0.26.0):
// the V2 model runner's and the speculative recipe's gpu_model_runner
// wording of the model load.
func TestRecordedStartups(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want summary.Startup
	}{
		{"night-startup.server.log", summary.Startup{WeightsSeconds: ptr(0.01), ModelLoadSeconds: ptr(1.808636), TorchCompileSeconds: ptr(12.01), CUDAGraphsSeconds: ptr(1), EngineInitSeconds: ptr(107.59)}},
		{"night-ngram-spec-startup.server.log", summary.Startup{WeightsSeconds: ptr(0.01), ModelLoadSeconds: ptr(0.226004), TorchCompileSeconds: ptr(9.74), CUDAGraphsSeconds: ptr(2), EngineInitSeconds: ptr(22.92)}},
		// Killed before its start-up was over: what it said so far.
		{"engine-start-fails.server.log", summary.Startup{WeightsSeconds: ptr(0.01), ModelLoadSeconds: ptr(1.298398)}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "vllm-0.26.0", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var p Parser
			// In pieces, as a pipe delivers it.
			for s := string(data); len(s) > 0; {
				n := min(len(s), 53)
				p.Write([]byte(s[:n]))
				s = s[n:]
			}
			if diff := cmp.Diff(tt.want, p.Times()); diff != "" {
				t.Errorf("Times() (-want +got):\n%s", diff)
			}
		})
	}
}

// Two engines (data parallel) each say it: the slower decides.
func TestSlowestProcessKept(t *testing.T) {
	t.Parallel()
	var p Parser
	p.Write([]byte(strings.Join([]string{
		"(EngineCore_DP0 pid=7) INFO 12-02 07:52:03 [core.py:340] init engine (profile, create kv cache, warmup model) took 20.50 s (compilation: 9.74 s)",
		"(EngineCore_DP1 pid=8) INFO 12-02 07:52:04 [core.py:340] init engine (profile, create kv cache, warmup model) took 22.92 s (compilation: 9.80 s)",
		"(EngineCore_DP0 pid=7) WARNING 12-02 07:52:04 [x.py:1] torch.compile took many s in total",
	}, "\n") + "\n"))
	want := summary.Startup{EngineInitSeconds: ptr(22.92)}
	if diff := cmp.Diff(want, p.Times()); diff != "" {
		t.Errorf("Times() (-want +got):\n%s", diff)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	s := summary.Startup{ReadySeconds: 132.013, WeightsSeconds: ptr(0.01), ModelLoadSeconds: ptr(1.808636), TorchCompileSeconds: ptr(12.01), CUDAGraphsSeconds: ptr(1), EngineInitSeconds: ptr(107.59)}
	if got, want := Describe(s), "ready in 132.0 s: weights 0.01 s, model loading 1.808636 s, torch.compile 12.01 s, CUDA graphs 1 s, engine init 107.59 s"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
	if got, want := Describe(summary.Startup{ReadySeconds: 4}), "ready in 4.0 s (vLLM's log did not split it)"; got != want {
		t.Errorf("Describe() = %q, want %q", got, want)
	}
}
