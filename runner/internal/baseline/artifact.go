package baseline

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/benchkite/benchkite/internal/contract"
)

// Agent is what StepSource asks of buildkite-agent (buildkite.Agent), in
// the job's working directory.
type Agent interface {
	// Download downloads the artifacts of step (a key) query matches
	// into dest; none is a failure.
	Download(ctx context.Context, query, dest, step string) error
	// StepState is the state of this build's step.
	StepState(ctx context.Context, step string) (string, error)
}

// StepSource is a Source over the history step's per-recipe files,
// fetched with buildkite-agent when a gate first asks: a GPU job starts
// without waiting for the history step, and needs past nights only after
// the model has loaded and run. If that step is still running then, the
// job waits for it, up to Wait; a step that finished without the file,
// or one still running after Wait, gives ErrNoBaseline with the reason
// (the gates then leave the run unverified).
type StepSource struct {
	Agent Agent
	// Step is the history step's key; Dir the working directory the
	// agent downloads into.
	Step string
	Dir  string
	// Wait bounds the wait for the history step; Poll is the pause
	// between looks (DefaultHistoryPoll when zero).
	Wait time.Duration
	Poll time.Duration
	Log  io.Writer
	// Now and Sleep are the clock, replaced in tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error

	mu      sync.Mutex
	done    bool  // the step has finished: one more look is final
	gaveUp  error // the wait ran out: no later lookup waits again
	sources map[string]*fileSource
	errs    map[string]error
}

// DefaultHistoryPoll is the pause between looks at a running history step.
const DefaultHistoryPoll = 10 * time.Second

// UnknownStateWait bounds the wait when buildkite-agent cannot report
// the history step's state (the wait is then all there is to go by).
const UnknownStateWait = 2 * time.Minute

// Last downloads recipe's history file (waiting for the step if need be)
// and answers from it.
func (s *StepSource) Last(ctx context.Context, recipe, stepKey string, n int) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err, ok := s.errs[recipe]; ok {
		return Result{}, err
	}
	src, ok := s.sources[recipe]
	if !ok {
		path, err := s.fetch(ctx, recipe)
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrNoBaseline, err)
			if s.errs == nil {
				s.errs = map[string]error{}
			}
			s.errs[recipe] = err
			return Result{}, err
		}
		src = &fileSource{path: path}
		if s.sources == nil {
			s.sources = map[string]*fileSource{}
		}
		s.sources[recipe] = src
	}
	return src.Last(ctx, recipe, stepKey, n)
}

// fetch downloads the recipe's file. Until the step has finished, a
// missing file means "not yet": it looks again every Poll, up to Wait in
// all for the job.
func (s *StepSource) fetch(ctx context.Context, recipe string) (string, error) {
	now, sleep, poll := s.Now, s.Sleep, s.Poll
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepCtx
	}
	if poll <= 0 {
		poll = DefaultHistoryPoll
	}
	rel, dest := s.Query(recipe)
	path := filepath.Join(s.Dir, filepath.FromSlash(rel))
	start := now()
	logged := false
	for {
		derr := s.Agent.Download(ctx, rel, dest, s.Step)
		if derr == nil {
			if _, err := os.Stat(path); err != nil {
				return "", fmt.Errorf("buildkite-agent downloaded %s but there is no %s: %w", rel, path, err)
			}
			if logged {
				fmt.Fprintf(s.Log, "runner: the history step finished after %s of waiting\n", now().Sub(start).Round(time.Second))
			}
			return path, nil
		}
		if s.done {
			return "", fmt.Errorf("the history step (key %q) finished without %s: %w", s.Step, rel, derr)
		}
		if s.gaveUp != nil {
			return "", s.gaveUp
		}
		state, serr := s.Agent.StepState(ctx, s.Step)
		switch {
		case serr != nil:
			// Without the state the wait is all there is to go by.
			state = "unknown (" + serr.Error() + ")"
		case state == "finished" || state == "ignored":
			// It may have uploaded between the download and this look.
			s.done = true
			continue
		}
		waited := now().Sub(start)
		if serr != nil && waited >= min(s.Wait, UnknownStateWait) {
			// An agent that cannot say how the step is doing may never
			// say: do not hold the GPUs for the whole wait.
			s.gaveUp = fmt.Errorf("the history step (key %q) has no %s after %s and buildkite-agent cannot tell its state: %w", s.Step, rel, waited, serr)
			return "", s.gaveUp
		}
		if waited >= s.Wait {
			s.gaveUp = fmt.Errorf("the history step (key %q) was still %s after %s (--history-wait); no past nights", s.Step, state, s.Wait)
			return "", s.gaveUp
		}
		if !logged {
			fmt.Fprintf(s.Log, "runner: the history step is %s; waiting for it (up to %s) to judge against past nights\n", state, s.Wait)
			logged = true
		}
		if err := sleep(ctx, min(poll, s.Wait-waited)); err != nil {
			return "", fmt.Errorf("waiting for the history step: %w", err)
		}
	}
}

// Query is what fetch asks the agent to download for recipe from the
// history step: the file's artifact path, and where it lands (the
// working directory, the path kept). A plan lists the same download.
func (s *StepSource) Query(recipe string) (query, dest string) {
	return contract.HistoryFile(recipe), "."
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
