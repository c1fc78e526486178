package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/ready"
	"github.com/benchkite/benchkite/runner/internal/rootcause"
	"github.com/benchkite/benchkite/runner/internal/startup"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
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

// containerName is unique per job so that concurrent jobs on one host and
// leftovers of a killed job never collide.
func containerName(res *workloads.Resolved, getenv func(string) string) string {
	id := getenv("BUILDKITE_JOB_ID")
	if id == "" {
		id = strconv.Itoa(os.Getpid())
	}
	return "benchkite-" + res.Recipe.Name + "-" + id
}

// loopback is where the server listens: only this machine reaches it.
const loopback = "127.0.0.1"

// Container labels: every server container carries them, so that the
// next job on the host can find what a killed one left, and tell a
// leftover from a container a live job still uses.
const (
	LabelJob    = "benchkite.job"
	LabelRecipe = "benchkite.recipe"
	// LabelRunner is the runner's proc.Identity: whether its job still
	// runs is a look at the host's process table.
	LabelRunner = "benchkite.runner"
)

// planIdentity stands for the runner's identity in a plan, which no
// runner process of its own runs.
const planIdentity = "<pid-namespace>/<pid>/<start-time>"

func containerLabels(res *workloads.Resolved, getenv func(string) string, identity string) []string {
	id := getenv("BUILDKITE_JOB_ID")
	if id == "" {
		id = "pid-" + strconv.Itoa(os.Getpid())
	}
	labels := []string{LabelJob + "=" + id, LabelRecipe + "=" + res.Recipe.Name}
	if identity != "" {
		labels = append(labels, LabelRunner+"="+identity)
	}
	return labels
}

// staleContainerSpecs list every benchkite server container on this host
// (of any recipe: a leftover of another recipe holds the GPUs just the
// same), describe them, and remove some.
func staleContainerSpecs(environ []string) (list proc.Spec, inspect func(ids []string) proc.Spec, remove func(ids []string) proc.Spec) {
	list = proc.Spec{Argv: []string{"docker", "ps", "-aq", "--no-trunc", "--filter", "label=" + LabelJob}, Env: environ}
	inspect = func(ids []string) proc.Spec {
		format := `{{.Id}}|{{.Name}}|{{.State.Running}}|{{index .Config.Labels "` + LabelJob + `"}}|{{index .Config.Labels "` + LabelRecipe + `"}}|{{index .Config.Labels "` + LabelRunner + `"}}`
		return proc.Spec{Argv: append([]string{"docker", "inspect", "-f", format}, ids...), Env: environ}
	}
	remove = func(ids []string) proc.Spec {
		return proc.Spec{Argv: append([]string{"docker", "rm", "-f"}, ids...), Env: environ}
	}
	return list, inspect, remove
}

// leftover is one container found by the sweep.
type leftover struct {
	id, name, job, recipe, runner string
	running                       bool
}

// staleReason says why a container is a leftover to remove, or "" when a
// live job (or one this runner cannot see) may still use it.
func staleReason(c leftover, ourJob string) string {
	switch {
	case !c.running:
		return "not running"
	case ourJob != "" && c.job == ourJob:
		return "left by an earlier run of this job"
	case c.runner == "":
		return "" // no runner identity: its job cannot be checked
	}
	if alive, known := proc.IdentityAlive(c.runner); known && !alive {
		return "its job's runner has ended"
	}
	return ""
}

// removeStaleContainers removes the benchkite containers on the host that
// no live job uses, naming each; a running one of a live job is left
// alone. Failures only warn: the port check that follows names what
// still holds the port.
func (j *Job) removeStaleContainers(ctx context.Context) {
	env, err := j.env(childenv.Docker)
	if err != nil {
		fmt.Fprintf(j.log, "runner: warning: list stale containers: %v\n", err)
		return
	}
	list, inspect, remove := staleContainerSpecs(env)
	var out strings.Builder
	list.Stdout, list.Stderr = &out, io.Discard
	if err := j.procs.Run(ctx, list); err != nil {
		fmt.Fprintf(j.log, "runner: warning: list stale containers: %v\n", err)
		return
	}
	ids := strings.Fields(out.String())
	if len(ids) == 0 {
		return
	}
	out.Reset()
	desc := inspect(ids)
	desc.Stdout, desc.Stderr = &out, io.Discard
	// A container gone between ps and inspect makes inspect fail for it
	// alone; the others are still printed.
	_ = j.procs.Run(ctx, desc)
	var stale []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 6 {
			continue
		}
		for i := range f {
			if f[i] == "<no value>" {
				f[i] = ""
			}
		}
		c := leftover{id: f[0], name: strings.TrimPrefix(f[1], "/"), running: f[2] == "true", job: f[3], recipe: f[4], runner: f[5]}
		why := staleReason(c, j.getenv("BUILDKITE_JOB_ID"))
		if why == "" {
			fmt.Fprintf(j.log, "runner: container %s (recipe %s, job %s) is running for a job that may be live; left alone\n", c.name, orText(c.recipe, nil), orText(c.job, nil))
			continue
		}
		fmt.Fprintf(j.log, "runner: removing container %s (recipe %s, job %s): %s\n", c.name, orText(c.recipe, nil), orText(c.job, nil), why)
		stale = append(stale, c.id)
	}
	if len(stale) == 0 {
		return
	}
	rm := remove(stale)
	rm.Stdout, rm.Stderr = io.Discard, j.log
	if err := j.procs.Run(ctx, rm); err != nil {
		fmt.Fprintf(j.log, "runner: warning: remove stale containers: %v\n", err)
	}
}

// serveSpecs are the commands that start the server: one for native, two
// for docker (`docker run -d`, then `docker logs -f` to stream and to
// notice the container ending).
//
// Natively the server binds loopback. In a container it must bind the
// container's interfaces for the published port to reach it, and the port
// is published on the host's loopback only.
func (j *Job) serveSpecs() ([]proc.Spec, error) {
	res := j.res
	serveArgv := res.ServeArgv(j.port)
	if res.Profile.Runtime != agents.Docker {
		env, err := j.env(childenv.Server, j.readyTimeoutVars()...)
		if err != nil {
			return nil, err
		}
		return []proc.Spec{{Argv: append(serveArgv, "--host", loopback), Env: env, Confine: j.modelCode()}}, nil
	}
	name := containerName(res, j.getenv)
	argv := []string{"docker", "run", "-d", "--rm", "--name", name}
	// Labels find this recipe's containers left by a killed job.
	for _, l := range containerLabels(res, j.getenv, j.identity) {
		argv = append(argv, "--label", l)
	}
	argv = append(argv, res.Profile.DockerRunFlags()...)
	// A secret goes by name only, its value in docker's own environment,
	// so that it is on no command line and in no log.
	var secrets []childenv.Var
	for _, e := range j.recipeEnv() {
		if err := childenv.CheckRecipe(e.Name); err != nil {
			return nil, err
		}
		if proc.IsSecretName(e.Name) {
			argv = append(argv, "-e", e.Name)
			secrets = append(secrets, e)
			continue
		}
		argv = append(argv, "-e", e.Name+"="+e.Value)
	}
	for _, ready := range j.readyTimeoutVars() {
		argv = append(argv, "-e", ready.Name+"="+ready.Value)
	}
	// Name only: docker copies the value from its own environment, so the
	// token is never on a command line or in a log.
	argv = append(argv, j.hfTokenFlags()...)
	hf := res.Profile.HFCacheDir()
	if res.Profile.HFHome != "" {
		argv = append(argv, "-v", hf+":"+hf)
	} else {
		argv = append(argv, "-v", "benchkite-hf-cache:"+hf)
	}
	for _, d := range j.containerDirs() {
		argv = append(argv, "-v", d+":"+d)
	}
	port := strconv.Itoa(j.port)
	image := res.PullImage
	if image == "" {
		image = res.Image.Image
	}
	variant, passed := j.variantFlags()
	argv = append(argv, variant...)
	argv = append(argv, j.containerCommand(image, port, serveArgv[2:])...)
	runEnv, err := j.env(childenv.DockerServer, append(secrets, passed...)...)
	if err != nil {
		return nil, err
	}
	logsEnv, err := j.env(childenv.Docker)
	if err != nil {
		return nil, err
	}
	return []proc.Spec{
		{Argv: argv, Env: runEnv},
		{Argv: []string{"docker", "logs", "-f", name}, Env: logsEnv},
	}, nil
}

// containerDirs are the results folders a container writes into, each
// mounted at its own path: the bench's and each aiperf config's, which run
// inside it (docker exec) and write their results there. The rest of the
// results directory (lm_eval's, BFCL's, the summary) is out of the
// container's reach.
func (j *Job) containerDirs() []string {
	dirs := []string{j.benchDir()}
	if a := j.res.Recipe.AIPerf; a != nil {
		for _, c := range a.Configs {
			dirs = append(dirs, j.aiperfDir(c))
		}
	}
	return dirs
}

// hfTokenFlags pass the Hugging Face tokens into a container by name, for
// the tokens the job has.
func (j *Job) hfTokenFlags() []string {
	var flags []string
	for _, secret := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if j.getenv(secret) != "" {
			flags = append(flags, "-e", secret)
		}
	}
	return flags
}

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

// noteServerExit records and shows why a server that was ready ended on
// its own: a bench or lm_eval failure alone does not show the server's
// last words, and they hold the cause.
func (j *Job) noteServerExit() {
	why := "exited with code 0"
	if err := j.server.proc.Wait(); err != nil {
		why = err.Error()
	}
	if p := j.sum.Phase(summary.PhaseReady); p == nil || p.Status != summary.StatusOK {
		return // ready failed on the exit and showed the log already
	}
	j.serverExit = why
	fmt.Fprintf(j.log, "+++ :warning: the server exited during the run (%s); last %d lines of its log\n", why, serverLogTail)
	for _, line := range j.server.tail.Lines() {
		fmt.Fprintln(j.log, line)
	}
}

// serverCause is the server's last words as the cause of a failed phase,
// when the server ended on its own while the phase ran (a crash, an OOM,
// an exit): its end took the phase down. After teardown the server's end
// is the runner's own, and what fails then (a gate, a verdict on numbers
// already measured; publishing) is never the server's doing: "".
func (j *Job) serverCause() string {
	if j.tornDown || !j.serverGone() || j.server.tail == nil {
		return ""
	}
	return j.serverDeath()
}

// serverError is what the server printed about a failure: the innermost
// exception of its process that died first (the EngineCore's, not the
// API server's "See root cause above"), else its last error lines; never
// a warning. "" when it printed none.
func (j *Job) serverError() string {
	if e, ok := j.server.rootException(); ok {
		return e.String()
	}
	return j.server.tail.ErrorCause()
}

// serverDeath is why the server ended, for a server that has: what it
// printed about it (serverError), else how its process ended, naming the
// API server. A server killed by a signal (SIGKILL, the OOM killer)
// printed nothing about its end; what it printed before is no cause.
func (j *Job) serverDeath() string {
	s := j.server
	if e, ok := s.rootException(); ok {
		return e.String()
	}
	var exit *proc.ExitError
	err := s.proc.Wait()
	signaled := errors.As(err, &exit) && exit.Signal != 0
	if !signaled {
		if c := s.tail.ErrorCause(); c != "" {
			return c
		}
	}
	if s.container != "" {
		// `docker logs -f` ended with the container; its status says
		// nothing of the server's.
		return "the server's container " + s.container + " ended"
	}
	why := "exited with code 0"
	if err != nil {
		why = err.Error()
	}
	if exit != nil && s.causes != nil {
		if api := s.causes.Prefix("APIServer"); api != "" && strings.HasPrefix(why, exit.Name+" ") {
			why = exit.Name + " " + api + why[len(exit.Name):]
		}
	}
	return "the server died: " + why
}

// containerCleanup stops the container, giving the server the grace
// period, and removes it.
func containerCleanup(name string, grace time.Duration) [][]string {
	secs := strconv.Itoa(int(grace.Round(time.Second) / time.Second))
	return [][]string{{"docker", "stop", "-t", secs, name}, {"docker", "rm", "-f", name}}
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

// setPort moves the server to port p before it starts.
func (j *Job) setPort(p int) {
	j.port = p
	j.baseURL = fmt.Sprintf("http://%s:%d", loopback, p)
}

// freePort is a loopback port nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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

// inspectSpec asks docker whether the server's container still runs.
func (j *Job) inspectSpec() (proc.Spec, error) {
	env, err := j.env(childenv.Docker)
	return proc.Spec{Argv: []string{"docker", "inspect", "-f", "{{.State.Running}}", containerName(j.res, j.getenv)}, Env: env}, err
}

// lastError is the last line of output that reports an error (docker ends
// a failure with a usage hint), else the last line.
func lastError(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(strings.ToLower(lines[i]), "error") {
			return lines[i]
		}
	}
	if len(lines) > 0 {
		return lines[len(lines)-1]
	}
	return ""
}
