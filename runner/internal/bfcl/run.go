package bfcl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// stderrTail is how much of the driver's stderr an error quotes.
const stderrTail = 4 << 10

// Run execs a prepared job, its output copied to out, and reads what it
// left. A driver that fails (BFCL raised, the server stopped answering) is
// an error quoting the end of its stderr.
func Run(ctx context.Context, job *Job, out io.Writer) (*Result, error) {
	cmd := exec.CommandContext(ctx, job.Argv[0], job.Argv[1:]...)
	cmd.Dir = job.Root
	cmd.Env = job.Env
	tail := &tailBuffer{max: stderrTail}
	// exec copies stdout and stderr on two goroutines; both reach out.
	w := &lockedWriter{w: out}
	cmd.Stdout = w
	cmd.Stderr = io.MultiWriter(w, tail)
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("bfcl %s: %w", job.Plan.Category, ctx.Err())
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("bfcl %s: driver exited with %d:\n%s", job.Plan.Category, ee.ExitCode(), strings.TrimSpace(tail.String()))
		}
		return nil, fmt.Errorf("bfcl %s: starting the driver: %w", job.Plan.Category, err)
	}
	return ReadResult(job)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if extra := t.buf.Len() - t.max; extra > 0 {
		t.buf.Next(extra)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return t.buf.String() }

// TaskResults are the accuracy results of a run in summary.json's shape:
// bfcl_<category> first, then bfcl_<leaf> for each leaf of a group, each
// with metric acc (a fraction). File is the score source relative to dir,
// the directory Prepare was given.
func (r *Result) TaskResults() []summary.TaskResult {
	one := func(s Score, samples int) summary.TaskResult {
		return summary.TaskResult{
			Task:    ResultName(s.Category),
			Status:  summary.StatusOK,
			Metrics: map[string]float64{MetricAcc: s.Acc},
			Samples: samples,
			File:    filepath.ToSlash(filepath.Join(r.Plan.Category, strings.SplitN(s.Source, ":", 2)[0])),
		}
	}
	out := []summary.TaskResult{one(r.Score, r.Total())}
	for _, s := range r.Sub {
		out = append(out, one(s, r.Entries[s.Category]))
	}
	return out
}

// FailedTaskResult is the summary entry of a category run that broke.
func FailedTaskResult(p Plan, err error) summary.TaskResult {
	return summary.TaskResult{Task: p.Name(), Status: summary.StatusFailed, Error: err.Error()}
}

// MetricAcc is the metric of every BFCL result.
const MetricAcc = workloads.BFCLMetric
