package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// bfclRecipe is tinyRecipe with a bfcl block of two categories, one a
// group of four leaves, subsampled.
func bfclRecipe(name string) string {
	return tinyRecipe(name, 1) + `bfcl:
  test_categories: [simple_python, multi_turn]
  num_threads: 2
  max_test_cases: {multi_turn: 8}
  expect:
    simple_python: {min: 0}
`
}

// withBFCL puts the stand-in bfcl_eval package on the job's PYTHONPATH,
// which the tools from PATH pass to the driver.
func (e *e2e) withBFCL(entries string) {
	abs, err := filepath.Abs("../bfcl/testdata")
	if err != nil {
		e.t.Fatal(err)
	}
	e.setenv("PYTHONPATH", abs, "BFCL_STANDIN_ENTRIES", entries)
}

func TestE2EBFCL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		env       []string
		code      int
		phase     string
		wantTasks map[string]string // task -> status
		wantError string
		scored    bool // every category ran and was scored
	}{
		{
			// The stand-in server makes no tool calls, so every category
			// scores 0: the floor fails each, gated or not.
			name: "both categories scored", code: 1, phase: "ok", scored: true,
			wantTasks: map[string]string{"gsm8k": "ok", "bfcl_simple_python": "ok", "bfcl_multi_turn": "ok",
				"bfcl_multi_turn_base": "ok", "bfcl_multi_turn_long_context": "ok", "bfcl_multi_turn_miss_func": "ok", "bfcl_multi_turn_miss_param": "ok"},
		},
		{
			name: "BFCL raises: the phase fails, bench and lm_eval are kept", env: []string{"BFCL_STANDIN_RAISE", "generate"}, code: 1, phase: "failed",
			wantTasks: map[string]string{"gsm8k": "ok", "bfcl_simple_python": "failed", "bfcl_multi_turn": "failed"},
			wantError: "bfcl_simple_python: ",
		},
		{
			name: "a category without a score names it and the files looked at", env: []string{"BFCL_STANDIN_NO_SCORE", "simple_python"}, code: 1, phase: "failed",
			wantTasks: map[string]string{"gsm8k": "ok", "bfcl_simple_python": "failed", "bfcl_multi_turn": "ok"},
			wantError: "simple_python: no score: looked at",
		},
		{
			// 8 bench requests and 10 lm_eval documents, then BFCL's first.
			name: "server dies during BFCL", env: []string{"FAKE_VLLM_DIE_AFTER_REQUESTS", "20"}, code: 1, phase: "failed",
			wantTasks: map[string]string{"gsm8k": "ok", "bfcl_simple_python": "failed"},
			wantError: "the server stopped answering",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "e2e-bfcl-" + strings.ReplaceAll(strings.Fields(tt.name)[0], ":", "")
			e := newE2E(t, name, bfclRecipe(name))
			e.withBFCL("6")
			e.setenv(tt.env...)
			o := e.run("--health-timeout", "5m")
			checkCode(t, o, tt.code)
			s := e.summary()
			if p := s.Phase(summary.PhaseBFCL); p == nil || p.Status != tt.phase {
				t.Fatalf("bfcl phase = %+v, want %s; log:\n%s", p, tt.phase, lastLines(o.stdout, 40))
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
					if strings.HasPrefix(task, "bfcl_") && !floored[task] {
						t.Errorf("%s scored 0 and did not fail the floor: %+v", task, s.Gates)
					}
				}
				samples := map[string]int{}
				for _, a := range s.Accuracy {
					samples[a.Task] = a.Samples
					if strings.HasPrefix(a.Task, "bfcl_") {
						if v, ok := a.Metrics["acc"]; !ok || v < 0 || v > 1 {
							t.Errorf("%s acc = %v, %v; want a fraction", a.Task, v, ok)
						}
					}
				}
				// 6 entries per leaf; multi_turn capped at 8, 2 per leaf.
				want := map[string]int{"bfcl_simple_python": 6, "bfcl_multi_turn": 8, "bfcl_multi_turn_base": 2, "bfcl_multi_turn_miss_param": 2}
				for task, n := range want {
					if samples[task] != n {
						t.Errorf("%s samples = %d, want %d", task, samples[task], n)
					}
				}
				gated := false
				for _, g := range s.Gates {
					gated = gated || (g.Subject == "bfcl_simple_python" && g.Metric == "acc")
				}
				if !gated {
					t.Errorf("no gate on bfcl_simple_python acc in %+v", s.Gates)
				}
				e.checkUploaded("bfcl-simple_python.log", "bfcl/simple_python/benchkite_bfcl.json")
			}
			if len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusOK {
				t.Errorf("bench = %+v, want kept", s.Bench)
			}
			e.checkNoLeftovers()
		})
	}
}
