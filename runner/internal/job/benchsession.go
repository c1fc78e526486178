package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/job/benchdriver"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// benchDriverPython is the interpreter the bench driver runs on: the
// server's, natively; the image's python3 in its container.
func (j *Job) benchDriverPython() string {
	if j.res.Profile.Runtime == agents.Docker && j.cfg.BaseURL == "" {
		return "python3"
	}
	return j.serverPython()
}

// benchDriverSpec is the one process that runs the phase's bench runs
// (benchdriver), where each `vllm bench serve` would run, with its
// environment; its argv come on stdin.
func (j *Job) benchDriverSpec() (proc.Spec, error) {
	argv := []string{j.benchDriverPython(), "-c", benchdriver.Source}
	if j.res.Profile.Runtime == agents.Docker && j.cfg.BaseURL == "" {
		exec := append([]string{"docker", "exec", "-i"}, j.hfTokenFlags()...)
		argv = append(append(exec, containerName(j.res, j.getenv)), argv...)
		env, err := j.env(childenv.DockerBench)
		return proc.Spec{Argv: argv, Env: env}, err
	}
	env, err := j.env(childenv.Bench)
	return proc.Spec{Argv: argv, Env: env}, err
}

// shortArgv is argv for the log: the driver's source by name, not in
// full (the plan shows it whole).
func shortArgv(argv []string) string {
	short := slices.Clone(argv)
	for i, a := range short {
		if a == benchdriver.Source {
			short[i] = "<benchdriver.py>"
		}
	}
	return proc.FormatArgv(short)
}

// vllmArgv is the `vllm bench serve ...` part of a bench spec's argv (on
// docker it follows `docker exec ... CONTAINER`).
func vllmArgv(argv []string) []string {
	for i := 0; i+2 < len(argv); i++ {
		if argv[i] == "vllm" && argv[i+1] == "bench" && argv[i+2] == "serve" {
			return argv[i:]
		}
	}
	return nil
}

// benchSession runs the bench runs of one phase: each through the bench
// driver, one Python process for them all, while it works; each as its
// own `vllm bench serve` where the driver cannot run there (no entry
// point in that Python). Cancelling the run's context ends the driver's
// process group as it ends a CLI's.
type benchSession struct {
	j   *Job
	cli bool // every run is its own `vllm bench serve`
	p   proc.Process
	in  *os.File // the driver's stdin
	out *benchRouter
	// lastEnd is when the previous run ended; zero before the first.
	lastEnd time.Time
}

func (j *Job) newBenchSession() *benchSession {
	s := &benchSession{j: j, cli: j.benchDriverOff()}
	if s.cli {
		fmt.Fprintf(j.log, "runner: %s=off: each bench run is its own `vllm bench serve`\n", benchDriverEnv)
	}
	return s
}

// benchDriverEnv=off runs each bench as its own `vllm bench serve`: to
// compare the two, or where the driver misbehaves with a vLLM version.
const benchDriverEnv = "BENCHKITE_BENCH_DRIVER"

func (j *Job) benchDriverOff() bool { return j.getenv != nil && j.getenv(benchDriverEnv) == "off" }

// run runs one bench spec (a CLI argv), its output to spec.Stdout and
// spec.Stderr, and logs how long it took and how long after the previous
// run it started.
func (s *benchSession) run(ctx context.Context, spec proc.Spec) error {
	start := time.Now()
	var err error
	if !s.cli && s.p == nil {
		s.start(ctx)
		if err := context.Cause(ctx); ctx.Err() != nil {
			return fmt.Errorf("vllm bench serve not started: %w", err)
		}
	}
	if s.cli {
		fmt.Fprintf(s.j.log, "$ %s\n", proc.FormatArgv(spec.Argv))
		start = time.Now()
		err = s.j.procs.Run(ctx, spec)
	} else {
		start, err = s.driverRun(ctx, spec)
	}
	end := time.Now()
	how := "as `vllm bench serve`"
	if !s.cli {
		how = "in the bench driver"
	}
	after := ""
	if !s.lastEnd.IsZero() {
		after = fmt.Sprintf(", started %.2f s after the previous run ended", start.Sub(s.lastEnd).Seconds())
	}
	fmt.Fprintf(s.j.log, "runner: bench run took %.2f s %s%s\n", end.Sub(start).Seconds(), how, after)
	s.lastEnd = end
	return err
}

// start starts the driver and waits for it to be ready; where it cannot
// be, the session falls back to the CLI.
func (s *benchSession) start(ctx context.Context) {
	j := s.j
	spec, err := j.benchDriverSpec()
	if err != nil {
		fmt.Fprintf(j.log, "runner: no bench driver (%v); each bench run is its own `vllm bench serve`\n", err)
		s.cli = true
		return
	}
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(j.log, "runner: no bench driver (stdin pipe: %v); each bench run is its own `vllm bench serve`\n", err)
		s.cli = true
		return
	}
	s.out = newBenchRouter(j.log)
	spec.Stdin, spec.Stdout, spec.Stderr = r, s.out, s.out
	fmt.Fprintf(j.log, "$ %s\n", shortArgv(spec.Argv))
	p, err := j.procs.Start(ctx, spec)
	r.Close() // the child has its copy
	if err != nil {
		w.Close()
		fmt.Fprintf(j.log, "runner: no bench driver (%v); each bench run is its own `vllm bench serve`\n", err)
		s.cli = true
		return
	}
	s.p, s.in = p, w
	select {
	case ev := <-s.out.events:
		if ev.Kind == "ready" {
			return
		}
		fmt.Fprintf(j.log, "runner: the bench driver said %q before it was ready; each bench run is its own `vllm bench serve`\n", ev.Kind)
		s.stop()
	case <-p.Done():
		if ctx.Err() != nil {
			s.close()
			return
		}
		if p.ExitCode() == benchdriver.ExitNoEntryPoint {
			fmt.Fprintf(j.log, "runner: %s has no vllm.benchmarks.serve entry point; each bench run is its own `vllm bench serve`\n", j.benchDriverPython())
		} else {
			fmt.Fprintf(j.log, "runner: the bench driver ended before it was ready (%v); each bench run is its own `vllm bench serve`\n", p.Wait())
		}
	case <-ctx.Done():
		<-p.Done()
	}
	s.close()
	s.cli = true
}

// driverRun hands spec's argv to the driver and waits for the run's end;
// it returns when the run started.
func (s *benchSession) driverRun(ctx context.Context, spec proc.Spec) (time.Time, error) {
	j := s.j
	argv := vllmArgv(spec.Argv)
	line, err := benchdriver.Request(argv)
	if argv == nil || err != nil {
		return time.Now(), fmt.Errorf("bench driver: no `vllm bench serve` argv in %s", proc.FormatArgv(spec.Argv))
	}
	fmt.Fprintf(j.log, "$ %s   (in the bench driver)\n", proc.FormatArgv(spec.Argv))
	// One pipe carries both streams, in order; spec.Stdout is the run's
	// writer for both (its Stderr is part of it).
	out := io.Writer(io.Discard)
	if spec.Stdout != nil {
		out = spec.Stdout
	}
	s.out.route(out)
	defer s.out.route(nil)
	start := time.Now()
	if _, err := s.in.Write(line); err != nil {
		err = s.ended(fmt.Errorf("bench driver: hand it the run: %w", err))
		return start, err
	}
	for {
		select {
		case ev := <-s.out.events:
			if ev.Kind != "end" {
				continue
			}
			if ev.RC != 0 {
				return start, fmt.Errorf("vllm bench serve (in the bench driver) exited with code %d", ev.RC)
			}
			return start, nil
		case <-s.p.Done():
			// What it wrote before its end is copied by now.
			select {
			case ev := <-s.out.events:
				if ev.Kind == "end" {
					s.close()
					if ev.RC != 0 {
						return start, fmt.Errorf("vllm bench serve (in the bench driver) exited with code %d", ev.RC)
					}
					return start, nil
				}
			default:
			}
			return start, s.ended(nil)
		}
	}
}

// ended is the error of a run whose driver ended during it; the next run
// starts a new driver.
func (s *benchSession) ended(cause error) error {
	<-s.p.Done()
	err := s.p.Wait()
	if err == nil {
		err = errors.New("ended before the run did")
	}
	s.close()
	if cause != nil {
		return fmt.Errorf("%w: vllm bench serve (in the bench driver): %w", cause, err)
	}
	return fmt.Errorf("vllm bench serve (in the bench driver): %w", err)
}

// close ends the driver once the phase is over: at the end of its stdin,
// or stopped when it does not end by itself.
func (s *benchSession) close() {
	if s.p == nil {
		return
	}
	s.in.Close()
	select {
	case <-s.p.Done():
	case <-time.After(10 * time.Second):
		s.stop()
	}
	s.p, s.in = nil, nil
}

func (s *benchSession) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.p.Stop(ctx)
}

// benchRouter splits the driver's output into its protocol lines
// (events) and the bench's own output, which goes to the writer of the
// run in progress, or to the job's log between runs.
type benchRouter struct {
	mu     sync.Mutex
	log    io.Writer
	dst    io.Writer
	line   []byte
	events chan benchdriver.Event
}

func newBenchRouter(log io.Writer) *benchRouter {
	return &benchRouter{log: log, events: make(chan benchdriver.Event, 64)}
}

func (r *benchRouter) route(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked()
	r.dst = w
}

// maxPending bounds a line held back to look for a protocol mark: a
// progress bar redrawn with "\r" may never end its line.
const maxPending = 64 << 10

func (r *benchRouter) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.line = append(r.line, b...)
			if len(r.line) > maxPending {
				r.flushLocked()
			}
			break
		}
		r.line = append(r.line, b[:i+1]...)
		b = b[i+1:]
		r.lineLocked()
	}
	return n, nil
}

// lineLocked handles the whole line in r.line. A mark may follow output
// that did not end its line (a progress bar on stderr): that part is
// output.
func (r *benchRouter) lineLocked() {
	text := strings.TrimSuffix(string(r.line), "\n")
	if i := strings.Index(text, benchdriver.Mark); i >= 0 {
		if ev, ok := benchdriver.ParseLine(text[i:]); ok {
			if i > 0 {
				r.writeLocked([]byte(text[:i] + "\n"))
			}
			r.line = r.line[:0]
			select {
			case r.events <- ev:
			default: // nobody reads more than a few; never block the copy
			}
			return
		}
	}
	r.flushLocked()
}

func (r *benchRouter) flushLocked() {
	if len(r.line) > 0 {
		r.writeLocked(r.line)
		r.line = r.line[:0]
	}
}

func (r *benchRouter) writeLocked(b []byte) {
	w := r.dst
	if w == nil {
		w = r.log
	}
	_, _ = w.Write(b)
}
