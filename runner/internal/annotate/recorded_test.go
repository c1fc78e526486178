package annotate

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// The headlines of the three faults recorded against vLLM 0.26.0 on an
// H200, from the summaries the runner now writes for them: the root
// cause, not its consequence, and a cancel said as one.
func TestHeadlineOfRecordedFaults(t *testing.T) {
	t.Parallel()
	base := summary.Summary{Recipe: "tiny_llama-b200", GPU: "B200", NumGPUs: 1, TP: 1, Model: "benchkite-test/tiny-llama", Verdict: summary.VerdictError}
	tests := []struct {
		name string
		edit func(*summary.Summary)
		want string
	}{
		{"engine start fails", func(s *summary.Summary) {
			s.Phases = []summary.Phase{{Name: summary.PhaseServe, Status: summary.StatusOK},
				{Name: summary.PhaseReady, Status: summary.StatusFailed, Error: "ready: server exited before it was ready: vllm exited with code 1",
					Cause: "(EngineCore pid=1150) ModuleNotFoundError: No module named 'flashinfer'"},
				{Name: summary.PhaseBench, Status: summary.StatusNotRun, Error: "server not ready"}}
			s.Failure = &summary.Failure{Class: "vllm", Signature: "vllm-import-error", Line: "(EngineCore pid=1150) ModuleNotFoundError: No module named 'flashinfer'", Phase: "ready"}
		}, "### 💥 `tiny_llama-b200`: error (vllm: vllm-import-error) — **ready** failed: (EngineCore pid=1150) ModuleNotFoundError: No module named 'flashinfer'"},
		{"server killed mid-bench", func(s *summary.Summary) {
			s.Phases = []summary.Phase{{Name: summary.PhaseReady, Status: summary.StatusOK},
				{Name: summary.PhaseBench, Status: summary.StatusFailed, Error: "512-in-128-out-conc-8: repetition 1: incomplete benchmark run: completed 0 of 64 prompts, 64 requests failed",
					Cause: "the server died: vllm (APIServer pid=4540) killed by signal 9 (killed)"},
				{Name: summary.PhaseLMEval, Status: summary.StatusNotRun, Error: "server exited"}}
			s.Failure = &summary.Failure{Class: "vllm", Signature: "server-died", Line: "the server died: vllm (APIServer pid=4540) killed by signal 9 (killed)", Phase: "bench"}
		}, "### 💥 `tiny_llama-b200`: error (vllm: server-died) — **bench** failed: the server died: vllm (APIServer pid=4540) killed by signal 9 (killed)"},
		{"canceled during load", func(s *summary.Summary) {
			s.Canceled = "received terminated"
			s.Problems = []string{"canceled: received terminated"}
			s.Phases = []summary.Phase{{Name: summary.PhaseReady, Status: summary.StatusCanceled, Error: "ready: wait for http://127.0.0.1:45487/health (last: connection refused): received terminated"}}
		}, "### 💥 `tiny_llama-b200`: error: canceled — **ready** canceled: ready: wait for http:\u200b//127.0.0.1:45487/health (last: connection refused): received terminated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := base
			tt.edit(&s)
			head, _, _ := strings.Cut(Render(s, ""), "\n")
			if head != tt.want {
				t.Errorf("headline:\n got %s\nwant %s", head, tt.want)
			}
		})
	}
}
