// Package proctest provides a scripted proc.Runner for tests of packages
// that run external tools.
//
// A test declares the commands it expects, in order, with their results;
// any other command fails the test, and so does an expectation left
// unused or a long-running fake left running at the end of the test.
//
//	f := proctest.New(t)
//	f.Expect("buildkite-agent", "annotate").Exit(0)
//	server := f.Expect("vllm", "serve").Stdout("INFO started\n").UntilStopped()
package proctest

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/proc"
)

// Fake is a proc.Runner that runs nothing.
type Fake struct {
	t testing.TB

	mu      sync.Mutex
	calls   []*Call
	started []proc.Spec
	running []*process
}

var _ proc.Runner = (*Fake)(nil)

// New returns a Fake whose checks run when the test ends.
func New(t testing.TB) *Fake {
	f := &Fake{t: t}
	t.Cleanup(f.verify)
	return f
}

// Call is one expected command and its scripted result.
type Call struct {
	prefix       []string
	stdout       string
	stderr       string
	code         int
	startErr     error
	untilStopped bool
	do           func(proc.Spec)
	ctxFn        func(context.Context)
	finish       chan int
	kill         chan syscall.Signal
	used         bool
}

// Expect adds an expected command: one whose argv begins with prefix.
// argv[0] also matches by base name, so "vllm" matches "/usr/bin/vllm".
// Each Call matches once; commands match Calls in the order they were
// added. By default the command writes nothing and exits 0.
func (f *Fake) Expect(prefix ...string) *Call {
	if len(prefix) == 0 {
		f.t.Fatal("proctest: Expect needs at least argv[0]")
	}
	c := &Call{prefix: prefix, finish: make(chan int, 1), kill: make(chan syscall.Signal, 1)}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	return c
}

// Stdout sets what the command writes to its standard output.
func (c *Call) Stdout(s string) *Call { c.stdout = s; return c }

// Stderr sets what the command writes to its standard error.
func (c *Call) Stderr(s string) *Call { c.stderr = s; return c }

// Exit sets the command's exit code.
func (c *Call) Exit(code int) *Call { c.code = code; return c }

// StartErr makes Start fail with err, as for a missing program.
func (c *Call) StartErr(err error) *Call { c.startErr = err; return c }

// Do runs fn when the command starts, before its output is written: for
// side effects such as the result files a real tool would write.
func (c *Call) Do(fn func(proc.Spec)) *Call { c.do = fn; return c }

// Ctx shows the test the context the command was started with (its
// deadline, its values).
func (c *Call) Ctx(fn func(context.Context)) *Call { c.ctxFn = fn; return c }

// UntilStopped makes the command run, like a server, until it is stopped,
// its context ends or Finish is called.
func (c *Call) UntilStopped() *Call { c.untilStopped = true; return c }

// Finish ends an UntilStopped command with the exit code, as if the
// program had exited by itself (a crashed server). Called before the
// command starts, it makes the command end as soon as it starts.
func (c *Call) Finish(code int) {
	select {
	case c.finish <- code:
	default:
	}
}

// Kill ends an UntilStopped command as if a signal from elsewhere had
// killed it (a server SIGKILLed by the OOM killer or a person).
func (c *Call) Kill(sig syscall.Signal) {
	select {
	case c.kill <- sig:
	default:
	}
}

func (c *Call) String() string { return proc.FormatArgv(c.prefix) }

func (c *Call) matches(argv []string) bool {
	if c.used || len(argv) < len(c.prefix) {
		return false
	}
	if argv[0] != c.prefix[0] && filepath.Base(argv[0]) != c.prefix[0] {
		return false
	}
	return slices.Equal(argv[1:len(c.prefix)], c.prefix[1:])
}

// Specs returns every Spec started so far, in order, unexpected ones
// included.
func (f *Fake) Specs() []proc.Spec {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.started)
}

// Argvs returns the argv of every Spec started so far, for go-cmp.
func (f *Fake) Argvs() [][]string {
	var out [][]string
	for _, s := range f.Specs() {
		out = append(out, s.Argv)
	}
	return out
}

// Run starts the command and waits for it.
func (f *Fake) Run(ctx context.Context, s proc.Spec) error {
	p, err := f.Start(ctx, s)
	if err != nil {
		return err
	}
	return p.Wait()
}

// Start plays the first unused matching Call. An unexpected command fails
// the test and returns an error.
func (f *Fake) Start(ctx context.Context, s proc.Spec) (proc.Process, error) {
	f.t.Helper()
	f.mu.Lock()
	s.Argv = slices.Clone(s.Argv)
	s.Env = slices.Clone(s.Env)
	f.started = append(f.started, s)
	var call *Call
	for _, c := range f.calls {
		if c.matches(s.Argv) {
			call = c
			c.used = true
			break
		}
	}
	f.mu.Unlock()

	if call == nil {
		f.t.Errorf("proctest: unexpected command: %s", proc.FormatArgv(s.Argv))
		return nil, fmt.Errorf("proctest: unexpected command: %s", proc.FormatArgv(s.Argv))
	}
	if call.startErr != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name(), call.startErr)
	}
	if call.do != nil {
		call.do(s)
	}
	if call.ctxFn != nil {
		call.ctxFn(ctx)
	}
	write(s.Stdout, call.stdout)
	write(s.Stderr, call.stderr)

	p := &process{name: s.Name(), pid: 1 << 22, done: make(chan struct{}), stop: make(chan struct{})}
	f.mu.Lock()
	p.pid += len(f.started) // distinct, and above any real pid_max default
	f.running = append(f.running, p)
	f.mu.Unlock()

	if !call.untilStopped {
		p.exit(call.code, 0, nil)
		return p, nil
	}
	go func() {
		select {
		case code := <-call.finish:
			p.exit(code, 0, nil)
		case sig := <-call.kill:
			p.exit(-1, sig, nil)
		case <-p.stop:
			p.exit(-1, syscall.SIGTERM, proc.ErrStopped)
		case <-ctx.Done():
			p.exit(-1, syscall.SIGTERM, context.Cause(ctx))
		}
	}()
	return p, nil
}

func write(w io.Writer, s string) {
	if w != nil && s != "" {
		io.WriteString(w, s)
	}
}

// verify reports expectations never used and processes never ended.
func (f *Fake) verify() {
	f.mu.Lock()
	defer f.mu.Unlock()
	var unused []string
	for _, c := range f.calls {
		if !c.used {
			unused = append(unused, c.String())
		}
	}
	if len(unused) > 0 {
		f.t.Errorf("proctest: expected commands never run:\n\t%s", strings.Join(unused, "\n\t"))
	}
	for _, p := range f.running {
		select {
		case <-p.done:
		default:
			f.t.Errorf("proctest: %s (pid %d) still running at the end of the test", p.name, p.pid)
		}
	}
}

type process struct {
	name     string
	pid      int
	done     chan struct{}
	stop     chan struct{}
	stopOnce sync.Once
	code     int
	err      error
}

func (p *process) exit(code int, sig syscall.Signal, cause error) {
	p.code = code
	if code != 0 || sig != 0 || cause != nil {
		p.err = &proc.ExitError{Name: p.name, Code: code, Signal: sig, Err: cause}
	}
	close(p.done)
}

func (p *process) Pid() int              { return p.pid }
func (p *process) Done() <-chan struct{} { return p.done }

func (p *process) Wait() error {
	<-p.done
	return p.err
}

func (p *process) ExitCode() int {
	select {
	case <-p.done:
		return p.code
	default:
		return -1
	}
}

func (p *process) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() { close(p.stop) })
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", p.name, context.Cause(ctx))
	}
}
