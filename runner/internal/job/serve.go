package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/ready"
	"github.com/benchkite/benchkite/runner/internal/rootcause"
	"github.com/benchkite/benchkite/runner/internal/startup"
)

// serverLogTail is how much server log a failure shows.
const serverLogTail = 80

// logsDrain bounds the wait for `docker logs -f` to end on its own after
// the container was removed.
const logsDrain = time.Second

// server is the running vLLM server: a native process group, or a docker
// container followed by `docker logs -f`.
type server struct {
	proc      proc.Process
	container string // docker runtime only
	logFile   *os.File
	prefix    *proc.PrefixWriter
	view      *serverLogView // what of the output the job log shows
	tail      *proc.Tail
	// causes follows the tracebacks in all of the output: a root cause
	// may be far above the tail (the engine's, before the API server's).
	causes *rootcause.Tracker
	// startup reads vLLM's start-up times from the output; started is
	// when the server's process (or container) started.
	startup *startup.Parser
	started time.Time
}

// rootException is the innermost exception of the server's process that
// died first, when it printed one.
func (s *server) rootException() (rootcause.Exception, bool) {
	if s.causes != nil {
		return s.causes.Root()
	}
	var t rootcause.Tracker
	if s.tail != nil {
		io.WriteString(&t, s.tail.String())
	}
	return t.Root()
}

func (s *server) done() <-chan struct{} { return s.proc.Done() }

// newServerOutput is where the server's output goes: all of it to
// server.log (f), what the job log shows of it to log, and its last lines
// kept for a failure's cause; out is the writer for its stdout and stderr.
func newServerOutput(log io.Writer, f *os.File) (s *server, out io.Writer) {
	s = &server{logFile: f, prefix: proc.NewPrefixWriter(log, "[vllm] "), tail: proc.NewTail(serverLogTail), causes: &rootcause.Tracker{}, startup: &startup.Parser{}}
	s.view = newServerLogView(s.prefix, progressEvery, time.Now)
	return s, io.MultiWriter(s.view, f, s.tail, s.causes, s.startup)
}

// loopback is where the server listens: only this machine reaches it.
const loopback = "127.0.0.1"

// serve starts the server with its output in the job log (prefixed) and in
// server.log.
func (j *Job) serve(ctx context.Context) error {
	specs, err := j.serveSpecs()
	if err != nil {
		return err
	}
	docker := len(specs) == 2
	if docker {
		j.removeStaleContainers(ctx)
	}
	if specs, err = j.claimPort(specs); err != nil {
		return err
	}
	ps, err := j.pytestSpecs()
	if err != nil {
		return err
	}
	if !docker {
		if err := j.serverPytest(ctx, ps); err != nil {
			return err
		}
	}
	f, err := j.createServerLog(docker)
	if err != nil {
		return err
	}
	s, out := newServerOutput(j.log, f)
	s.started = j.now()
	if docker {
		s.container = containerName(j.res, j.getenv)
		if err := j.startContainer(ctx, s, specs[0], out); err != nil {
			return err
		}
	}
	if err := j.startServerProcess(ctx, s, specs[len(specs)-1], out); err != nil {
		return err
	}
	if ps.release != nil {
		return j.releaseServer(ctx, s, ps)
	}
	return nil
}

// claimPort makes sure the server's port is free: a server left on it
// would answer /health and every request in place of ours, and ours would
// fail to bind. A port derived from the job id gives way to a free one
// (two job ids may share a port), and specs are built again for it.
func (j *Job) claimPort(specs []proc.Spec) ([]proc.Spec, error) {
	err := ready.CheckPortFree(j.port)
	if err == nil {
		return specs, nil
	}
	if !j.portDerived || !errors.Is(err, ready.ErrPortInUse) {
		return nil, err
	}
	p, ferr := freePort()
	if ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	fmt.Fprintf(j.log, "runner: %v; the port came from the job id, so the server takes free port %d instead\n", err, p)
	j.setPort(p)
	return j.serveSpecs()
}

// createServerLog creates server.log and, for docker, the folders the
// container mounts: docker would create a missing one as root.
func (j *Job) createServerLog(docker bool) (*os.File, error) {
	f, err := os.Create(filepath.Join(j.dir, "server.log"))
	if err != nil {
		return nil, fmt.Errorf("create server log: %w", err)
	}
	if docker {
		for _, d := range j.containerDirs() {
			if err := os.MkdirAll(d, 0o755); err != nil {
				f.Close()
				return nil, fmt.Errorf("create %s: %w", d, err)
			}
		}
	}
	return f, nil
}

// startContainer runs `docker run -d`. When it fails the server is still
// recorded, so that teardown closes its log, and docker's reason (a name
// conflict, a missing image), its last words, goes into the error: it
// belongs in the summary, not only the log.
func (j *Job) startContainer(ctx context.Context, s *server, run proc.Spec, out io.Writer) error {
	run.Stdout, run.Stderr = out, out
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(run.Argv))
	err := j.procs.Run(ctx, run)
	if err == nil {
		return nil
	}
	j.server = s
	j.noteCause(s.tail)
	if why := lastError(s.tail.Lines()); why != "" {
		return fmt.Errorf("start container: %w: %s", err, why)
	}
	return fmt.Errorf("start container: %w", err)
}

// startServerProcess starts the server's process (natively vLLM, in
// docker `docker logs -f`) and records the server. The process lives
// until teardown, not until the serve phase ends.
func (j *Job) startServerProcess(ctx context.Context, s *server, spec proc.Spec, out io.Writer) error {
	spec.Stdout, spec.Stderr = out, out
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(spec.Argv))
	p, err := j.procs.Start(context.WithoutCancel(ctx), spec)
	if err != nil {
		s.logFile.Close()
		return fmt.Errorf("start server: %w", err)
	}
	s.proc = p
	j.server = s
	return nil
}

// releaseServer runs the server's pytest while the container waits at its
// gate, then lets vLLM start; its start-up is timed from then.
func (j *Job) releaseServer(ctx context.Context, s *server, ps pytestSpecs) error {
	if err := j.serverPytest(ctx, ps); err != nil {
		return err
	}
	rel := *ps.release
	rel.Stdout, rel.Stderr = io.Discard, j.log
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(rel.Argv))
	if err := j.procs.Run(ctx, rel); err != nil {
		return fmt.Errorf("start the server in container %s: %w", s.container, err)
	}
	s.started = j.now() // vLLM starts once released
	return nil
}

// ready waits for /health and the model in /v1/models, failing within
// seconds when the server process ends.
func (j *Job) ready(ctx context.Context) error {
	opts := ready.Options{
		BaseURL:  j.baseURL,
		Model:    j.res.ServedModel(),
		Interval: 500 * time.Millisecond,
		Timeout:  j.cfg.HealthTimeout,
		Progress: j.log,
	}
	if j.server != nil {
		opts.Exited = j.server.done()
		opts.ExitErr = j.server.proc.Wait
	}
	start := j.now()
	err := ready.Wait(ctx, opts)
	if err == nil {
		err = j.checkOurs(ctx)
	}
	if err == nil {
		fmt.Fprintf(j.log, "runner: server ready after %s\n", j.now().Sub(start).Round(time.Millisecond))
		j.noteStartup()
		return nil
	}
	if j.server != nil && (errors.Is(err, ready.ErrServerExited) || errors.Is(err, ready.ErrTimeout)) {
		if j.cause == "" {
			if errors.Is(err, ready.ErrTimeout) {
				// Still running: only an error it printed is a cause.
				j.cause = j.serverError()
			} else {
				j.cause = j.serverDeath()
			}
		}
		fmt.Fprintf(j.log, "+++ :warning: last %d lines of the server log\n", serverLogTail)
		for _, line := range j.server.tail.Lines() {
			fmt.Fprintln(j.log, line)
		}
	}
	return err
}

// noteStartup records the server's start-up, now that it is ready: its
// time to ready and the parts vLLM's log gave.
func (j *Job) noteStartup() {
	s := j.server
	if s == nil || s.startup == nil || s.started.IsZero() {
		return
	}
	st := s.startup.Times()
	st.ReadySeconds = math.Round(j.now().Sub(s.started).Seconds()*1000) / 1000
	j.sum.Startup = &st
	fmt.Fprintf(j.log, "runner: start-up: %s\n", startup.Describe(st))
}

// servingCheckTimeout bounds stillServing: a server that answers at all
// answers at once once the bench load is gone.
const servingCheckTimeout = 5 * time.Second

// stillServing asks whether the server still serves the model, failing at
// once when its process has ended.
func (j *Job) stillServing(ctx context.Context) error {
	opts := ready.Options{
		BaseURL:  j.baseURL,
		Model:    j.res.ServedModel(),
		Interval: 200 * time.Millisecond,
		Timeout:  servingCheckTimeout,
	}
	if j.server != nil && j.server.proc != nil {
		opts.Exited = j.server.done()
		opts.ExitErr = j.server.proc.Wait
	}
	if err := ready.Wait(ctx, opts); err != nil {
		return err
	}
	return j.checkOurs(ctx)
}

// checkOurs makes sure what answered is our server: its process is alive
// and, natively, a process of its tree holds the listening socket; in
// docker, the container is running (docker's proxy holds the port). An
// attached server (--base-url) is taken on trust.
func (j *Job) checkOurs(ctx context.Context) error {
	s := j.server
	if s == nil || s.proc == nil {
		return nil
	}
	if j.serverGone() {
		return fmt.Errorf("%w: the server process ended, yet %s answered", ready.ErrNotOurServer, j.baseURL)
	}
	if s.container != "" {
		var out strings.Builder
		spec, err := j.inspectSpec()
		if err == nil {
			spec.Stdout, spec.Stderr = &out, io.Discard
			err = j.procs.Run(ctx, spec)
		}
		if err != nil || strings.TrimSpace(out.String()) != "true" {
			return fmt.Errorf("%w: container %s is not running (%s), yet %s answered", ready.ErrNotOurServer, s.container, orText(strings.TrimSpace(out.String()), err), j.baseURL)
		}
		return nil
	}
	root := s.proc.Pid()
	return ready.CheckOwner(j.port, func(pid int) bool { return ready.InTree(root, pid) })
}

func orText(s string, err error) string {
	if s != "" {
		return s
	}
	if err != nil {
		return err.Error()
	}
	return "no answer"
}

// teardown stops the server: TERM its process group and session, wait
// the grace period, KILL; for docker also stop and remove the container;
// then end any process the server left. After a cancel (hurry) the server
// gets TeardownBudget, not its grace period.
func (j *Job) teardown(ctx context.Context, hurry bool) {
	j.tornDown = true
	s := j.server
	if s == nil {
		return
	}
	grace := j.cfg.Grace
	if hurry {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, TeardownBudget)
		defer cancel()
		grace = min(grace, TeardownBudget-time.Second)
	}
	defer j.endLeftovers(ctx)
	gone := j.serverGone()
	if gone {
		j.noteServerExit()
	}
	if s.container != "" {
		env, _ := j.env(childenv.Docker)
		for _, argv := range containerCleanup(s.container, grace) {
			// Spare: a second cancel must not kill the stop or the rm half
			// way, leaving a container that holds the node's GPUs; the
			// last deadline still ends them.
			if err := j.procs.Run(ctx, proc.Spec{Argv: argv, Env: env, Stdout: io.Discard, Stderr: io.Discard, Spare: true}); err != nil && argv[1] == "rm" {
				// rm fails when --rm already removed it; only say so.
				fmt.Fprintf(j.log, "runner: %s: %v\n", strings.Join(argv[:2], " "), err)
			}
		}
		// `docker logs -f` ends by itself once the container has; let it
		// copy the server's last lines (its shutdown) before it is stopped.
		if s.proc != nil {
			select {
			case <-s.done():
			case <-time.After(logsDrain):
			case <-ctx.Done():
			}
		}
	}
	if s.proc != nil {
		if err := s.proc.Stop(ctx); err != nil {
			fmt.Fprintf(j.log, "runner: stop server: %v\n", err)
		} else if err := s.proc.Wait(); err != nil && !gone {
			// Say so when SIGTERM was not enough.
			fmt.Fprintf(j.log, "runner: server stopped: %v\n", err)
		}
	}
	if s.view != nil {
		s.view.Close()
	}
	s.prefix.Close()
	s.logFile.Close()
}

// endLeftovers ends the processes the server left behind (an engine that
// left its process group and session) and says so.
func (j *Job) endLeftovers(ctx context.Context) {
	if j.killLeftovers == nil {
		return
	}
	if pids := j.killLeftovers(ctx); len(pids) > 0 {
		fmt.Fprintf(j.log, "runner: ended %d process(es) the server left behind: pids %v\n", len(pids), pids)
	}
}

// serverGone reports whether the server's process has ended.
func (j *Job) serverGone() bool {
	if j.server == nil || j.server.proc == nil {
		return false
	}
	select {
	case <-j.server.done():
		return true
	default:
		return false
	}
}
