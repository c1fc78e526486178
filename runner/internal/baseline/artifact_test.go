package baseline_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
)

// historyStep is a history step as a GPU job's buildkite-agent sees it:
// running until finishAt on a fake clock, then finished, with the recipe's
// file uploaded (unless noFile).
type historyStep struct {
	t        *testing.T
	dir      string
	now      time.Time
	finishAt time.Time // zero: never
	noFile   bool
	noState  bool // the agent cannot tell the step's state
	calls    []string
}

func (h *historyStep) finished() bool { return !h.finishAt.IsZero() && !h.now.Before(h.finishAt) }

func (h *historyStep) Download(_ context.Context, query, dest, step string) error {
	h.calls = append(h.calls, strings.Join([]string{"artifact download", query, dest, "--step", step}, " "))
	if step != "history" || dest != "." {
		h.t.Fatalf("unexpected download of %q into %q from step %q", query, dest, step)
	}
	if !h.finished() || h.noFile {
		return errors.New("exit status 1: No artifacts found for downloading")
	}
	f := &baseline.File{Version: baseline.FileVersion}
	f.Record(recipe, stepKey, 3, baseline.Result{Nights: []baseline.Night{{BuildNumber: 41, Summary: summary(41)}}}, nil)
	path := filepath.Join(h.dir, filepath.FromSlash(query))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	return f.WriteFile(path)
}

func (h *historyStep) StepState(_ context.Context, step string) (string, error) {
	h.calls = append(h.calls, "step get state --step "+step)
	switch {
	case step != "history":
		h.t.Fatalf("unexpected state of step %q", step)
	case h.noState:
		return "", errors.New("exit status 1: unknown command \"step\"")
	case h.finished():
		return "finished", nil
	}
	return "running", nil
}

func (h *historyStep) source(wait time.Duration, log *bytes.Buffer) *baseline.StepSource {
	return &baseline.StepSource{
		Agent: h, Step: contract.HistoryStepKey, Dir: h.dir, Wait: wait, Poll: 10 * time.Second, Log: log,
		Now:   func() time.Time { return h.now },
		Sleep: func(_ context.Context, d time.Duration) error { h.now = h.now.Add(d); return nil },
	}
}

// A job that reaches its gate before the history step finishes waits for
// it, then judges against the nights it uploaded.
func TestStepSourceWaitsForTheHistoryStep(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	h := &historyStep{t: t, dir: t.TempDir(), now: start, finishAt: start.Add(35 * time.Second)}
	var log bytes.Buffer
	r, err := h.source(10*time.Minute, &log).Last(context.Background(), recipe, stepKey, 3)
	if err != nil {
		t.Fatalf("Last() error = %v", err)
	}
	if len(r.Nights) != 1 || r.Nights[0].BuildNumber != 41 {
		t.Errorf("Last() nights = %+v, want build 41", r.Nights)
	}
	if got := h.now.Sub(start); got != 40*time.Second {
		t.Errorf("waited %s, want 40s (four looks 10 s apart)", got)
	}
	for _, want := range []string{"the history step is running; waiting for it (up to 10m0s)", "finished after 40s of waiting"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log %q does not say %q", log.String(), want)
		}
	}
}

// A history step that never finishes costs the job at most the wait, and
// every recipe's lookup after it fails at once with the reason.
func TestStepSourceGivesUpAfterTheWait(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	h := &historyStep{t: t, dir: t.TempDir(), now: start}
	src := h.source(5*time.Minute, &bytes.Buffer{})
	_, err := src.Last(context.Background(), recipe, stepKey, 3)
	if !errors.Is(err, baseline.ErrNoBaseline) || !strings.Contains(err.Error(), `the history step (key "history") was still running after 5m0s`) {
		t.Errorf("Last() error = %v, want no-baseline saying the step was still running", err)
	}
	if got := h.now.Sub(start); got != 5*time.Minute {
		t.Errorf("waited %s, want the 5m bound", got)
	}
	_, err = src.Last(context.Background(), "twin-h200", "recipe:twin-h200", 1)
	if !errors.Is(err, baseline.ErrNoBaseline) || h.now.Sub(start) != 5*time.Minute {
		t.Errorf("second recipe: error = %v after %s; want no-baseline without waiting again", err, h.now.Sub(start))
	}
}

// A history step that finished without the recipe's file (it failed, or
// was not asked for it) gives no baseline, saying so, without waiting.
func TestStepSourceFinishedWithoutTheFile(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	h := &historyStep{t: t, dir: t.TempDir(), now: start, finishAt: start, noFile: true}
	_, err := h.source(5*time.Minute, &bytes.Buffer{}).Last(context.Background(), recipe, stepKey, 3)
	if !errors.Is(err, baseline.ErrNoBaseline) || !strings.Contains(err.Error(), "finished without "+contract.HistoryFile(recipe)) {
		t.Errorf("Last() error = %v, want no-baseline saying the step finished without the file", err)
	}
	if h.now != start {
		t.Errorf("waited %s for a finished step", h.now.Sub(start))
	}
}

// An agent that cannot tell the step's state bounds the wait at
// UnknownStateWait, not the whole wait, and says why.
func TestStepSourceUnknownStateWaitsLess(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	h := &historyStep{t: t, dir: t.TempDir(), now: start, noState: true}
	_, err := h.source(30*time.Minute, &bytes.Buffer{}).Last(context.Background(), recipe, stepKey, 3)
	if !errors.Is(err, baseline.ErrNoBaseline) || !strings.Contains(err.Error(), "cannot tell its state") {
		t.Errorf("Last() error = %v, want no-baseline saying the state is unknown", err)
	}
	if got := h.now.Sub(start); got != baseline.UnknownStateWait {
		t.Errorf("waited %s, want %s", got, baseline.UnknownStateWait)
	}
}
