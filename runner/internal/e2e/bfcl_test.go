package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// bfclGroupRecipe has one BFCL category, a group of four leaves,
// subsampled, and no lm_eval task: the bench, then BFCL.
func bfclGroupRecipe(name string) string {
	return tinyHead(name, toolCalling) + "vllm_bench:\n  configs:\n" + shortBench("short") + `bfcl:
  test_categories: [multi_turn]
  num_threads: 2
  max_test_cases: {multi_turn: 8}
  expect:
    multi_turn: {min: 0}
`
}

// toolCalling are the serve args BFCL needs: vLLM answers a request that
// offers tools with HTTP 400 without them.
const toolCalling = "--enable-auto-tool-choice --tool-call-parser hermes"

// withRealBFCL has the runner's tools phase provide the locked
// lm-eval-bfcl set from the tests' venv cache, and the stand-in server
// answer from bfcl_eval's shipped data.
func (e *e2e) withRealBFCL(t *testing.T) {
	t.Helper()
	requireVenvPython(t)
	dir := toolsCacheDir(t)
	e.setenv("BENCHKITE_TOOLS", "venv", "BENCHKITE_TOOLS_DIR", dir,
		"PIP_CACHE_DIR", filepath.Join(dir, "pip-cache"),
		"FAKE_VLLM_BFCL_DATA", bfclDataDir(t, dir))
	e.setenv(networkEnv()...)
}

// TestE2EBFCL runs a BFCL group through the runner and the real bfcl_eval:
// its leaves become results of their own, gated; and a server that dies
// during BFCL fails the phase and keeps the bench.
func TestE2EBFCL(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	tests := []struct {
		name      string
		env       []string
		phase     string
		wantTasks map[string]string // task -> status
		wantError string
		scored    bool
	}{
		{
			// The stand-in answers multi-turn questions in words, so
			// BFCL scores every leaf 0: the floor fails each, gated or not.
			name: "group scored", phase: "ok", scored: true,
			wantTasks: map[string]string{"bfcl_multi_turn": "ok", "bfcl_multi_turn_base": "ok", "bfcl_multi_turn_long_context": "ok",
				"bfcl_multi_turn_miss_func": "ok", "bfcl_multi_turn_miss_param": "ok"},
		},
		{
			// 8 bench requests, then BFCL's first two.
			name: "server dies during BFCL", env: []string{"FAKE_VLLM_DIE_AFTER_REQUESTS", "10"}, phase: "failed",
			wantTasks: map[string]string{"bfcl_multi_turn": "failed"},
			wantError: "the server stopped answering",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "e2e-bfcl-" + strings.Fields(tt.name)[0]
			e := newE2E(t, name, bfclGroupRecipe(name))
			e.withRealBFCL(t)
			e.setenv(tt.env...)
			o := e.start("--health-timeout", "5m").waitWithin(realToolsBound)
			checkCode(t, o, 1)
			s := e.summary()
			if p := s.Phase(summary.PhaseBFCL); p == nil || p.Status != tt.phase {
				t.Fatalf("bfcl phase = %+v, want %s; log:\n%s", p, tt.phase, lastLines(o.stdout, 60))
			} else if !strings.Contains(p.Error, tt.wantError) {
				t.Errorf("bfcl phase error = %q, want it to contain %q", p.Error, tt.wantError)
			}
			got := map[string]string{}
			for _, a := range s.Accuracy {
				got[a.Task] = a.Status
			}
			for task, status := range tt.wantTasks {
				if got[task] != status {
					t.Errorf("accuracy %s = %q, want %q (all: %v)", task, got[task], status, got)
				}
			}
			if tt.scored {
				if s.Verdict != summary.VerdictFail {
					t.Errorf("verdict = %s, want fail: every score is 0", s.Verdict)
				}
				floored := map[string]bool{}
				for _, g := range s.Gates {
					if g.Verdict == summary.VerdictFail && strings.Contains(g.Message, "at or below the floor 0") {
						floored[g.Subject] = true
					}
				}
				for task := range tt.wantTasks {
					if !floored[task] {
						t.Errorf("%s scored 0 and did not fail the floor: %+v", task, s.Gates)
					}
				}
				// multi_turn capped at 8, 2 per leaf.
				want := map[string]int{"bfcl_multi_turn": 8, "bfcl_multi_turn_base": 2, "bfcl_multi_turn_long_context": 2,
					"bfcl_multi_turn_miss_func": 2, "bfcl_multi_turn_miss_param": 2}
				for _, a := range s.Accuracy {
					if n, ok := want[a.Task]; ok {
						if a.Samples != n {
							t.Errorf("%s samples = %d, want %d", a.Task, a.Samples, n)
						}
						if v, ok := a.Metrics["acc"]; !ok || v != 0 {
							t.Errorf("%s acc = %v, %v; want BFCL's 0", a.Task, v, ok)
						}
					}
				}
				e.checkUploaded("bfcl-multi_turn.log", "bfcl/multi_turn/benchkite_bfcl.json")
			}
			if len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusOK {
				t.Errorf("bench = %+v, want kept", s.Bench)
			}
			e.checkNoLeftovers()
		})
	}
}
