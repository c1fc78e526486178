package bfcl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
)

// The runner starts the driver through its own exec seam; these tests run
// it directly.

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
