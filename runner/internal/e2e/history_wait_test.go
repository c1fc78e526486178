package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// TestE2EGateWaitsForHistoryStep runs the GPU step's runner as the
// generated step does (--history-step, no history file), while the
// history step is still running: at its gate the job asks the agent for
// its recipes' files, finds none, sees the step running and waits; the
// step then finishes and uploads, and the job judges gsm8k against the
// twin's night.
func TestE2EGateWaitsForHistoryStep(t *testing.T) {
	t.Parallel()
	api := nospecAPI(t)
	e := newE2E(t, seedName, smallSeedRecipe(t))
	e.setenv("FAKE_VLLM_ACCURACY", "0.9", "FAKE_LMEVAL_DOCS", "50",
		"BENCHKITE_API_URL", api.URL, "BUILDKITE_ORGANIZATION_SLUG", api.Org, "BUILDKITE_PIPELINE_SLUG", api.Pipeline)
	e.history([]string{"BUILDKITE_API_TOKEN", apiToken}, contract.Need{Recipe: seedName, Nights: 10}, contract.Need{Recipe: nospecName, Nights: 1})

	// What the history step will upload, kept out of the job's directory
	// until it has.
	steps := filepath.Join(t.TempDir(), "steps")
	states := filepath.Join(t.TempDir(), "states")
	uploaded := filepath.Join(steps, contract.HistoryStepKey, filepath.FromSlash(contract.HistoryDir))
	if err := os.MkdirAll(filepath.Dir(uploaded), 0o755); err != nil {
		t.Fatal(err)
	}
	pending := filepath.Join(t.TempDir(), "pending")
	if err := os.Rename(filepath.Join(e.dir, filepath.FromSlash(contract.HistoryDir)), pending); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(states, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(states, contract.HistoryStepKey)
	if err := os.WriteFile(state, []byte("running\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.setenv("FAKE_AGENT_DOWNLOADS", steps, "FAKE_AGENT_STEP_STATES", states)

	// The history step finishes once the job has looked at it and found
	// it running, whenever that is.
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(runBound)
		for time.Now().Before(deadline) {
			// Read raw: a line may be half written, and this is not the
			// test's goroutine.
			log, _ := os.ReadFile(filepath.Join(e.dir, agentLogFile))
			if strings.Contains(string(log), `"buildkite-agent","step","get","state"`) {
				if err := os.Rename(pending, uploaded); err != nil {
					t.Error(err)
				}
				if err := os.WriteFile(state, []byte("finished\n"), 0o644); err != nil {
					t.Error(err)
				}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	o := e.run("--health-timeout", "5m", "--history-step", contract.HistoryStepKey, "--history-wait", "5m")
	<-done
	// The seed's own bench has no nights here: a new recipe's first nights
	// pass on their other gates.
	checkCode(t, o, 0)
	if !strings.Contains(o.stdout, "the history step is running; waiting for it") {
		t.Errorf("the job did not wait for the history step; stdout:\n%s", o.stdout)
	}
	s := e.summary()
	for _, g := range s.Gates {
		if g.Kind == summary.GateAccuracy && g.Subject == "gsm8k" {
			if g.Verdict != summary.VerdictPass || g.Baseline == nil {
				t.Errorf("gsm8k gate = %+v, want pass against the twin's night", g)
			}
			return
		}
	}
	t.Errorf("no gsm8k gate in %+v", s.Gates)
}
