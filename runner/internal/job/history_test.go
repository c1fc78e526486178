package job

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// runningHistory is the buildkite-agent a GPU job sees while the history
// step still runs: for the first `running` looks at its state it is
// running and its artifacts are not there; then it has finished and
// uploaded file for each recipe.
type runningHistory struct {
	startsNothing
	t       *testing.T
	running int
	files   map[string][]byte // by artifact path

	mu    sync.Mutex
	looks int
	runs  [][]string
}

func (h *runningHistory) Run(_ context.Context, s proc.Spec) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs = append(h.runs, s.Argv)
	finished := h.looks >= h.running
	switch a := s.Argv; {
	case len(a) == 7 && slices.Equal(a[:2], []string{"buildkite-agent", "artifact"}) && a[2] == "download" && a[4] == "." && a[5] == "--step" && a[6] == contract.HistoryStepKey:
		data, ok := h.files[a[3]]
		if !finished || !ok {
			fmt.Fprintln(s.Stderr, "fatal: Failed to download artifacts: No artifacts found for downloading")
			return &proc.ExitError{Name: a[0], Code: 1}
		}
		if err := os.MkdirAll(filepath.Dir(a[3]), 0o755); err != nil {
			h.t.Fatal(err)
		}
		return os.WriteFile(a[3], data, 0o644)
	case slices.Equal(a, []string{"buildkite-agent", "step", "get", "state", "--step", contract.HistoryStepKey}):
		h.looks++
		state := "running"
		if h.looks > h.running {
			state = "finished"
		}
		_, err := fmt.Fprintln(s.Stdout, state)
		return err
	}
	h.t.Errorf("unexpected command %q", s.Argv)
	return &proc.ExitError{Name: s.Argv[0], Code: 1}
}

// A GPU job that reaches its gate before the history step has finished
// waits for it, then judges against the nights it uploaded.
func TestGateWaitsForTheHistoryStep(t *testing.T) {
	t.Chdir(t.TempDir()) // the agent downloads into the job's working directory
	const twin = "twin-mi355x"
	f := &baseline.File{Version: baseline.FileVersion}
	f.Record(twin, contract.StepKey(twin), 1, baseline.Result{Nights: []baseline.Night{accuracyNight(t, 41, twin, 0.93)}}, nil)
	dir := t.TempDir()
	if err := f.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "recipes", twin+".json"))
	if err != nil {
		t.Fatal(err)
	}
	agent := &runningHistory{t: t, running: 3, files: map[string][]byte{contract.HistoryFile(twin): data}}
	res := accuracyRecipe(workloads.Expectation{Metric: flexible, BaselineFrom: twin, Tolerance: 0.015})
	var log strings.Builder
	j := New(Config{Port: 8000, HistoryStep: contract.HistoryStepKey, HistoryWait: time.Minute, HistoryPoll: 10 * time.Millisecond}, res,
		Deps{Log: &log, Getenv: mapGetenv(nil), Procs: agent})
	j.sum.Accuracy = gsm8kSummary("r-mi355x", 0.93).Accuracy

	if err := j.gate(context.Background()); err != nil {
		t.Fatalf("gate() = %v", err)
	}
	if len(j.sum.Gates) != 1 || j.sum.Gates[0].Verdict != summary.VerdictPass || j.sum.Gates[0].Baseline == nil || *j.sum.Gates[0].Baseline != 0.93 {
		t.Fatalf("gates = %+v, want gsm8k passing against %s's night (0.93)", j.sum.Gates, twin)
	}
	if agent.looks != 4 {
		t.Errorf("looked at the history step %d times, want 4 (three running, then finished)", agent.looks)
	}
	if !strings.Contains(log.String(), "the history step is running; waiting for it (up to 1m0s)") {
		t.Errorf("log does not say the job waited for the history step:\n%s", log.String())
	}
}
