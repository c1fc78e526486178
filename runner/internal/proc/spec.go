package proc

import (
	"context"
	"io"
	"slices"

	"github.com/benchkite/benchkite/internal/shell"
	"github.com/benchkite/benchkite/runner/internal/confine"
)

// Spec describes one command to run.
type Spec struct {
	// Argv is the program and its arguments. Argv[0] is looked up in the
	// PATH of Env (or the runner's PATH when Env has none).
	Argv []string
	// Env is the child's complete environment. Nil means an empty
	// environment: pass os.Environ() explicitly to inherit the runner's.
	Env []string
	// Dir is the working directory; empty means the runner's.
	Dir string
	// Stdout and Stderr receive the child's output; nil discards it.
	// Passing the same writer for both keeps the two streams in the order
	// the child wrote them.
	Stdout, Stderr io.Writer
	// Stdin feeds the child's standard input; nil means /dev/null.
	Stdin io.Reader
	// Spare: KillAll (a second cancel) leaves the process and its group
	// to finish, because it publishes what exists (the artifact upload,
	// the annotation); only KillEverything ends it.
	Spare bool
	// Confine, when set, starts the command in user and mount namespaces
	// of its own (runner/internal/confine): for the processes that run
	// model code, which must not read a process holding a token.
	Confine *confine.Policy
}

// Name is argv[0], the name used in errors and logs.
func (s Spec) Name() string {
	if len(s.Argv) == 0 {
		return ""
	}
	return s.Argv[0]
}

// clone copies the slices of s so a recorded Spec cannot change under the
// recorder when the caller reuses its slices.
func (s Spec) clone() Spec {
	s.Argv = slices.Clone(s.Argv)
	s.Env = slices.Clone(s.Env)
	if s.Confine != nil {
		c := *s.Confine
		c.ReadOnly = slices.Clone(c.ReadOnly)
		s.Confine = &c
	}
	return s
}

// Runner starts external commands. Exec is the real one; tests may put a
// fake in its place.
type Runner interface {
	// Start starts the command and returns at once. Cancelling ctx stops
	// the command as Process.Stop does.
	Start(ctx context.Context, s Spec) (Process, error)
	// Run starts the command and waits for it. A non-zero exit is an
	// *ExitError.
	Run(ctx context.Context, s Spec) error
}

// Process is a started command.
type Process interface {
	// Pid is the child's process id, which is also its process group and
	// session id.
	Pid() int
	// Wait blocks until the command has ended, the rest of its process
	// group is gone and its output is copied. It returns nil on exit code
	// 0, an *ExitError otherwise. It may be called any number of times.
	Wait() error
	// Done is closed when Wait would no longer block.
	Done() <-chan struct{}
	// ExitCode is the exit status once Done is closed; -1 before that or
	// when the command was killed by a signal.
	ExitCode() int
	// Stop sends SIGTERM to the process group (and session), waits the grace period and
	// then sends SIGKILL. It returns once the process has ended, or with
	// an error when ctx ends first (the group is then killed at once).
	Stop(ctx context.Context) error
}

// FormatArgv renders argv for a log line, quoting words the way a POSIX
// shell would need them. It is for display only: commands are never run
// through a shell.
func FormatArgv(argv []string) string { return shell.Join(argv) }
