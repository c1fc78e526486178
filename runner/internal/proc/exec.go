package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchkite/benchkite/runner/internal/confine"
)

const (
	// DefaultGrace is how long a stopped command gets between SIGTERM and
	// SIGKILL.
	DefaultGrace = 10 * time.Second
	// DefaultDrainTimeout is how long Wait keeps copying output after the
	// process group is gone.
	DefaultDrainTimeout = time.Second
	// DefaultCancelGrace is the grace of a command whose context ended (a
	// cancelled job): short, so that the runner's cleanup fits in the
	// agent's cancel grace period (10 s by default).
	DefaultCancelGrace = 1500 * time.Millisecond
	// groupPoll is how often a stopping group is checked for members.
	groupPoll = 50 * time.Millisecond
)

// ErrStopped is the cause carried by the ExitError of a command that
// Process.Stop ended.
var ErrStopped = errors.New("stopped by the runner")

// Exec is the real Runner: it starts programs with os/exec, each in its
// own process group.
type Exec struct {
	// Grace is the time between SIGTERM and SIGKILL when a command is
	// stopped; zero means DefaultGrace.
	Grace time.Duration
	// CancelGrace is that time when the command's context ends; zero
	// means DefaultCancelGrace, and it is never longer than Grace.
	CancelGrace time.Duration
	// DrainTimeout bounds how long Wait keeps copying output once the
	// process group is gone. Only a descendant that left the group and
	// kept the pipe open hits it. Zero means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// OnStart, when set, sees a copy of every Spec before it starts; the
	// plan command and tests use it to record what was run.
	OnStart func(Spec)
}

var _ Runner = Exec{}

// Run starts the command and waits for it.
func (e Exec) Run(ctx context.Context, s Spec) error {
	p, err := e.Start(ctx, s)
	if err != nil {
		return err
	}
	return p.Wait()
}

// Start starts the command in a new process group.
func (e Exec) Start(ctx context.Context, s Spec) (Process, error) {
	if len(s.Argv) == 0 {
		return nil, errors.New("start: empty argv")
	}
	if e.OnStart != nil {
		e.OnStart(s.clone())
	}
	name := s.Argv[0]
	path, err := lookPath(name, s.Env)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}

	p := &execProcess{
		name:        name,
		ctx:         ctx,
		grace:       orDefault(e.Grace, DefaultGrace),
		cancelGrace: min(orDefault(e.CancelGrace, DefaultCancelGrace), orDefault(e.Grace, DefaultGrace)),
		drain:       orDefault(e.DrainTimeout, DefaultDrainTimeout),
		started:     make(chan struct{}),
		exited:      make(chan struct{}),
		stopped:     make(chan struct{}),
		kill:        make(chan struct{}),
		done:        make(chan struct{}),
	}
	attr := sysProcAttr()
	argv := slices.Clone(s.Argv)
	if s.Confine != nil {
		if path, argv, err = confine.Wrap(path, argv, *s.Confine, attr); err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args = argv
	cmd.Env = s.Env
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would inherit the runner's environment
	}
	cmd.Dir = s.Dir
	cmd.Stdin = s.Stdin
	cmd.SysProcAttr = attr
	cmd.Cancel = p.cancel
	// Backstop: should the group signals not end the child, os/exec kills
	// it once this much time has passed after ctx ended.
	cmd.WaitDelay = p.grace
	if err := p.attachOutput(cmd, s.Stdout, s.Stderr); err != nil {
		p.closePipes()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	// A KillAll scanning the process table meanwhile must find the
	// child already tracked, spared or not.
	spawnMu.Lock()
	if err := cmd.Start(); err != nil {
		spawnMu.Unlock()
		p.closePipes()
		if s.Confine != nil {
			err = confine.StartError(err)
		}
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.cmd = cmd
	p.pid = cmd.Process.Pid
	track(p.pid, s.Spare)
	spawnMu.Unlock()
	close(p.started)
	for _, o := range p.pipes {
		o.w.Close() // the child has its copy; ours would keep EOF away
		go o.copy()
	}
	go p.wait()
	return p, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// lookPath resolves name in the PATH of the child's environment, so that
// a Spec behaves the same whatever the runner's own PATH is.
func lookPath(name string, env []string) (string, error) {
	if filepath.Base(name) != name {
		return name, nil
	}
	path, ok := LookupEnv(env, "PATH")
	if !ok {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // a relative PATH entry would depend on Dir
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// LookupEnv returns the last value of key in env, "KEY=value" entries, as
// a child's getenv would.
func LookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

type execProcess struct {
	name        string
	ctx         context.Context
	grace       time.Duration
	cancelGrace time.Duration
	drain       time.Duration
	cmd         *exec.Cmd
	pid         int
	pipes       []*outputPipe

	started chan struct{} // pid is set
	exited  chan struct{} // the child itself is reaped
	stopped chan struct{} // escalate finished
	kill    chan struct{} // SIGKILL now, without waiting out the grace
	done    chan struct{} // Wait's result is ready

	mu       sync.Mutex
	stopping bool // escalate has started
	canceled bool // the stop came from ctx
	stopCall bool // the stop came from Stop
	killOnce sync.Once

	err      error
	exitCode int
}

func (p *execProcess) Pid() int { return p.pid }

func (p *execProcess) Done() <-chan struct{} { return p.done }

func (p *execProcess) Wait() error {
	<-p.done
	return p.err
}

func (p *execProcess) ExitCode() int {
	select {
	case <-p.done:
		return p.exitCode
	default:
		return -1
	}
}

func (p *execProcess) Stop(ctx context.Context) error {
	p.mu.Lock()
	select {
	case <-p.exited:
		// wait() takes care of what is left of the group.
	default:
		p.stopCall = true
		p.startStopLocked()
	}
	p.mu.Unlock()

	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		p.killNow()
		return fmt.Errorf("stop %s: %w", p.name, context.Cause(ctx))
	}
}

// cancel is the exec.Cmd Cancel hook, called once ctx ends.
func (p *execProcess) cancel() error {
	<-p.started
	select {
	case <-p.exited:
		return os.ErrProcessDone
	default:
	}
	p.mu.Lock()
	p.canceled = true
	p.startStopLocked()
	p.mu.Unlock()
	return nil
}

func (p *execProcess) killNow() {
	p.killOnce.Do(func() { close(p.kill) })
}

// startStopLocked sends SIGTERM to the group and starts the escalation to
// SIGKILL, once. p.mu must be held.
func (p *execProcess) startStopLocked() {
	if p.stopping {
		return
	}
	p.stopping = true
	_ = signalGroup(p.pid, syscall.SIGTERM)
	go p.escalate()
}

// escalate waits until the child is reaped and its group has no live
// member, or the grace period is over, or killNow; in the latter two cases
// it kills the group.
func (p *execProcess) escalate() {
	defer close(p.stopped)
	p.mu.Lock()
	d := p.grace
	if p.canceled {
		d = p.cancelGrace
	}
	p.mu.Unlock()
	grace := time.NewTimer(d)
	defer grace.Stop()
	tick := time.NewTicker(groupPoll)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			select {
			case <-p.exited:
				if !groupAlive(p.pid) {
					return
				}
			default:
			}
			continue
		case <-grace.C:
		case <-p.kill:
		}
		break
	}
	_ = signalGroup(p.pid, syscall.SIGKILL)
}

func (p *execProcess) wait() {
	waitErr := p.cmd.Wait()
	close(p.exited)

	// The child is gone; anything it left in its group must not outlive
	// the runner, and must not hold the output pipes.
	p.mu.Lock()
	if !p.stopping && groupAlive(p.pid) {
		p.startStopLocked()
	}
	stopping := p.stopping
	p.mu.Unlock()
	if stopping {
		<-p.stopped
	}
	p.drainOutput()
	untrack(p.pid)

	p.exitCode = p.cmd.ProcessState.ExitCode()
	p.err = p.result(waitErr)
	close(p.done)
}

func (p *execProcess) result(waitErr error) error {
	state := p.cmd.ProcessState
	if state == nil {
		return fmt.Errorf("wait for %s: %w", p.name, waitErr)
	}
	p.mu.Lock()
	canceled, stopCall := p.canceled, p.stopCall
	p.mu.Unlock()

	var cause error
	switch {
	case canceled:
		cause = context.Cause(p.ctx)
	case stopCall && !state.Success():
		cause = ErrStopped
	}
	if !state.Success() || cause != nil {
		e := &ExitError{Name: p.name, Code: state.ExitCode(), Err: cause}
		if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal()
		}
		return e
	}
	for _, o := range p.pipes {
		if o.err != nil {
			return fmt.Errorf("copy output of %s: %w", p.name, o.err)
		}
	}
	if waitErr != nil {
		return fmt.Errorf("wait for %s: %w", p.name, waitErr)
	}
	return nil
}

// attachOutput gives the child pipes the package owns rather than those
// of os/exec, so that Wait returns when the child exits instead of when
// the last holder of the pipe does.
func (p *execProcess) attachOutput(cmd *exec.Cmd, stdout, stderr io.Writer) error {
	out, err := p.output(stdout)
	if err != nil {
		return err
	}
	cmd.Stdout = out
	if sameWriter(stdout, stderr) {
		cmd.Stderr = out // one pipe keeps the two streams in order
		return nil
	}
	cmd.Stderr, err = p.output(stderr)
	return err
}

func (p *execProcess) output(dst io.Writer) (io.Writer, error) {
	switch d := dst.(type) {
	case nil:
		return nil, nil
	case *os.File:
		return d, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	p.pipes = append(p.pipes, &outputPipe{r: r, w: w, dst: dst, done: make(chan struct{})})
	return w, nil
}

// sameWriter is a == b without the panic for uncomparable dynamic types.
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a != nil && a == b
}

func (p *execProcess) closePipes() {
	for _, o := range p.pipes {
		o.r.Close()
		o.w.Close()
	}
}

// drainOutput waits for the copies to reach EOF. Past the drain timeout
// a descendant outside the group holds a pipe; closing the read end ends
// the copy (and that descendant gets EPIPE).
func (p *execProcess) drainOutput() {
	timeout := time.NewTimer(p.drain)
	defer timeout.Stop()
	for _, o := range p.pipes {
		select {
		case <-o.done:
		case <-timeout.C:
			for _, o := range p.pipes {
				o.r.Close()
			}
			for _, o := range p.pipes {
				<-o.done
			}
			return
		}
	}
	for _, o := range p.pipes {
		o.r.Close()
	}
}

type outputPipe struct {
	r, w *os.File
	dst  io.Writer
	done chan struct{}
	err  error // first write error; read only after done
}

func (o *outputPipe) copy() {
	defer close(o.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := o.r.Read(buf)
		if n > 0 && o.err == nil {
			// After a write error keep reading, so the child never
			// blocks on a full pipe.
			if _, werr := o.dst.Write(buf[:n]); werr != nil {
				o.err = werr
			}
		}
		if err != nil {
			return
		}
	}
}
