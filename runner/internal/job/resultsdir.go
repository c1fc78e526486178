package job

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// freshDir makes the run's results directory, empty. A directory left by
// an earlier run into the same place is moved aside to
// <dir>.old-<UTC timestamp>, and the log says so: its files must not be
// parsed as this run's results, nor uploaded as this job's artifacts, and
// deleting them would lose what a person may still want to read. Moving
// rather than refusing keeps a retried job on the same agent running.
func (j *Job) freshDir() error {
	entries, err := os.ReadDir(j.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("results directory %s: %w", j.dir, err)
	case len(entries) > 0:
		old := summary.SetAsideName(j.dir, j.now())
		if err := os.Rename(j.dir, old); err != nil {
			return fmt.Errorf("results directory %s holds %d entries of an earlier run and cannot be moved aside: %w", j.dir, len(entries), err)
		}
		fmt.Fprintf(j.log, "runner: results directory %s held %d entries of an earlier run; moved them to %s so that only this run's files are read and uploaded\n", j.dir, len(entries), old)
	}
	if err := os.MkdirAll(j.dir, 0o755); err != nil {
		return fmt.Errorf("create results directory: %w", err)
	}
	return nil
}
