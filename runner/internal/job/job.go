package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
	"github.com/benchkite/benchkite/runner/internal/buildlog"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/rootcause"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/benchkite/benchkite/workloads"
)

// CleanupBudget bounds teardown and publishing after a cancel. Buildkite
// gives a cancelled job the agent's cancel-grace-period (10 s by default)
// between SIGTERM and SIGKILL; teardown, summary and annotation must fit
// in it with a margin. README's reliability section says how to raise it.
const CleanupBudget = 6 * time.Second

// TeardownBudget is the part of CleanupBudget the server gets to stop
// after a cancel before it is killed; the summary and the annotation
// need the rest.
const TeardownBudget = 3 * time.Second

// cleanupTimeout bounds teardown and publishing when nothing hurries
// them: the server gets its full grace period.
const cleanupTimeout = 2 * time.Minute

// Config is what a run needs besides the recipe: the runner's flags.
type Config struct {
	ResultsDir    string        // default results/<recipe name>
	Port          int           // the server's port
	HealthTimeout time.Duration // how long the server may take to become healthy; 0: the recipe's start-up timeout
	BaseURL       string        // attach to this server instead of starting one
	BenchOnly     bool          // skip accuracy tasks
	Grace         time.Duration // SIGTERM to SIGKILL when stopping a process
	// Baselines is the build's history file (the history step's
	// artifact); "" gives no baselines. The job never calls the API.
	Baselines string
	// HistoryStep, when Baselines is "", is the key of the build's
	// history step: at the gate phase the job downloads its recipes'
	// files from it with buildkite-agent, waiting for it up to
	// HistoryWait if it is still running.
	HistoryStep  string
	HistoryWait  time.Duration
	HistoryPoll  time.Duration // between looks at it; baseline.DefaultHistoryPoll when zero
	IngestURL    string        // best-effort dashboard sink; "" for none
	IngestSecret string        // Buildkite secret with the ingest token
	// IngestPerfEval turns on the perf-eval-compatible sink: rows to
	// IngestPerfURL, accuracy results and samples to IngestEvalURL.
	IngestPerfEval               bool
	IngestPerfURL, IngestEvalURL string
	IngestNoSamples              bool
	// IngestNightlyOnly sends only scheduled nights that did not fail and
	// ran their own server; other runs are marked when sent.
	IngestNightlyOnly bool
	// PortAuto: no port was asked for (no --port, BENCHKITE_PORT or
	// VLLM_PORT). Inside a Buildkite job the port is then JobPort of the
	// job id, on every runtime, and a free one if that is held; outside
	// one, Port, or a free one where the server binds the host's network.
	PortAuto bool
	// Tools is how lm_eval and the BFCL driver are found: installed into
	// ToolsDir (tools.ModeVenv) or taken from PATH (tools.ModePath).
	Tools    tools.Mode
	ToolsDir string
	// PassEnv names job variables every child gets as they are.
	PassEnv []string
	// Unconfined starts the processes that run model code without user
	// and mount namespaces of their own (modelCode), for hosts whose
	// kernel allows none.
	Unconfined bool
}

// Deps are the job's ties to the world, replaced in tests.
type Deps struct {
	Procs   proc.Runner
	Log     io.Writer
	Getenv  func(string) string
	Environ []string
	Now     func() time.Time
	// Baselines gives past nights; nil reads Config.Baselines.
	Baselines func(ctx context.Context) (baseline.Source, error)
	// Agent runs buildkite-agent (annotate, artifacts, secrets), with
	// the environment the job gives it; nil Procs run it with Procs.
	Agent buildkite.Agent
	// KillLeftovers ends whatever the runner's processes left running
	// after teardown (proc.KillDescendants) and returns their pids; nil
	// does nothing, for tests that share a process with others.
	KillLeftovers func(ctx context.Context) []int
}

// Job is one run of one recipe.
type Job struct {
	cfg           Config
	killLeftovers func(ctx context.Context) []int
	agentDep      buildkite.Agent
	res           *workloads.Resolved
	procs         proc.Runner
	log           io.Writer
	getenv        func(string) string
	environ       []string
	now           func() time.Time

	// identity is the runner's proc.Identity, labelled on its container.
	identity string
	dir      string // results/<name>
	absDir   string // dir, absolute: where a container sees it
	port     int
	baseURL  string
	// portDerived: port came from the job id, not from the user, so
	// another may replace it when something holds it.
	portDerived bool
	deny        []string // more variables no child may get
	tools       tools.Tools
	server      *server
	// serverExit says why the server ended on its own after it was
	// ready; empty when it did not.
	serverExit string
	// tornDown: teardown ran, so the server's end is the runner's doing.
	tornDown bool
	// unserving says why a server still running stopped serving.
	unserving string
	// canarySaved is the GPU time, in GPU-seconds, that bench points
	// skipped after a failed canary would have taken (an estimate).
	canarySaved float64
	// cause is the failed process's own words for the phase running now
	// (noteCause); the phase's record takes it.
	cause   string
	sum     summary.Summary
	history *baseline.History
	// historyStep is the history step the gates download past nights
	// from (--history-step); nil when they come from elsewhere.
	historyStep *baseline.StepSource
	// hasPast: the run has past nights to ask (a history file or step).
	hasPast bool
}

// Result is what a run ends with; main turns it into an exit code.
type Result struct {
	Summary summary.Summary
	// Failed: the verdict is not pass; the closing log lines say why.
	Failed bool
	// Verdict is Summary.Verdict: pass, fail, error or unverified.
	Verdict string
	// Exit is the step's exit status when no signal stopped the run
	// (gate.Judgement.Exit).
	Exit int
}

// New prepares a run of res; nothing is started until Run.
func New(c Config, res *workloads.Resolved, d Deps) *Job {
	if d.Now == nil {
		d.Now = time.Now
	}
	j := &Job{cfg: c, res: res, procs: d.Procs, log: d.Log, getenv: d.Getenv, environ: d.Environ, now: d.Now, killLeftovers: d.KillLeftovers, agentDep: d.Agent}
	j.identity = proc.Identity()
	if d.Procs == nil {
		j.identity = planIdentity // a plan: no run, no runner of its own
	}
	j.dir = c.ResultsDir
	if j.dir == "" {
		j.dir = contract.ResultsDir(res.Recipe.Name)
	}
	if abs, err := filepath.Abs(j.dir); err == nil {
		j.absDir = abs
	} else {
		j.absDir = j.dir
	}
	if c.HealthTimeout == 0 {
		j.cfg.HealthTimeout = res.Recipe.StartupTimeout()
	}
	j.port = c.Port
	if c.PortAuto && c.BaseURL == "" {
		var id string
		if j.getenv != nil {
			id = j.getenv("BUILDKITE_JOB_ID")
		}
		if id != "" {
			j.port, j.portDerived = JobPort(id), true
		} else if res.Profile.HostNetwork() {
			if p, err := freePort(); err == nil {
				j.port = p
			}
		}
	}
	j.baseURL = strings.TrimSuffix(c.BaseURL, "/")
	if j.baseURL == "" {
		j.baseURL = fmt.Sprintf("http://%s:%d", loopback, j.port)
	}
	source := d.Baselines
	if source == nil && c.Baselines != "" {
		file := baseline.FileSource(c.Baselines)
		source = func(context.Context) (baseline.Source, error) { return file, nil }
	}
	if source == nil && c.HistoryStep != "" {
		j.historyStep = &baseline.StepSource{Agent: historyAgent{j}, Step: c.HistoryStep, Dir: ".", Wait: c.HistoryWait, Poll: c.HistoryPoll, Log: j.log}
		source = func(context.Context) (baseline.Source, error) { return j.historyStep, nil }
	}
	j.hasPast = source != nil
	j.history = baseline.NewHistory(source)
	r := res.Recipe
	j.sum = summary.Summary{
		SchemaVersion:    summary.SchemaVersion,
		Recipe:           r.Name,
		GPU:              r.GPU,
		Device:           res.Device,
		NumGPUs:          r.NumGPUs,
		TP:               res.TP,
		DP:               res.DP,
		Precision:        res.Precision,
		PrecisionGuessed: res.PrecisionSource == workloads.PrecisionGuessed,
		Model:            r.VLLM.Model,
		Image:            res.Image.Image,
		VLLMCommit:       res.Image.Commit,
		Fingerprint:      fingerprint(res),
		Buildkite:        buildkiteInfo(d.Getenv),
		Phases:           []summary.Phase{},
		Bench:            []summary.BenchRun{},
		Accuracy:         []summary.TaskResult{},
		Gates:            []summary.GateResult{},
	}
	j.sum.ImageTag, j.sum.ImageDigest = imageParts(res.Image.Image)
	if j.sum.VLLMCommit == "" && j.sum.ImageDigest != "" && d.Getenv != nil {
		// The generator read it from the image's labels; the tag of a
		// pinned image need not name it.
		j.sum.VLLMCommit = strings.TrimSpace(d.Getenv("VLLM_COMMIT"))
	}
	return j
}

// buildkite is the job's door to Buildkite: the agent, run by the job's
// runner with the environment of its role, and the API.
func (j *Job) buildkite() (buildkite.Door, error) {
	env, err := j.env(childenv.Agent)
	if err != nil {
		return buildkite.Door{}, err
	}
	a := j.agentDep.WithEnv(env)
	if a.Procs == nil {
		a.Procs = j.procs
	}
	return buildkite.Door{Agent: a, Getenv: j.getenv}, nil
}

// historyAgent is the agent as the history step's files need it, with
// the environment of its role when it is first asked.
type historyAgent struct{ j *Job }

func (a historyAgent) Download(ctx context.Context, query, dest, step string) error {
	bk, err := a.j.buildkite()
	if err != nil {
		return err
	}
	return bk.Agent.Download(ctx, query, dest, step)
}

func (a historyAgent) StepState(ctx context.Context, step string) (string, error) {
	bk, err := a.j.buildkite()
	if err != nil {
		return "", err
	}
	return bk.Agent.StepState(ctx, step)
}

func buildkiteInfo(getenv func(string) string) *summary.BuildkiteInfo {
	if getenv("BUILDKITE_JOB_ID") == "" && getenv("BUILDKITE_BUILD_ID") == "" && getenv("BUILDKITE") != "true" {
		return nil
	}
	return &summary.BuildkiteInfo{
		BuildID:        getenv("BUILDKITE_BUILD_ID"),
		BuildNumber:    getenv("BUILDKITE_BUILD_NUMBER"),
		BuildURL:       getenv("BUILDKITE_BUILD_URL"),
		JobID:          getenv("BUILDKITE_JOB_ID"),
		StepKey:        getenv("BUILDKITE_STEP_KEY"),
		Branch:         getenv("BUILDKITE_BRANCH"),
		BaselineBranch: baselineBranch(getenv),
		Commit:         getenv("BUILDKITE_COMMIT"),
		Source:         getenv("BUILDKITE_SOURCE"),
		PullRequest:    getenv("BUILDKITE_PULL_REQUEST"),
	}
}

// baselineBranch is where the history step finds the nights: the branch
// `runner history --baseline-branch` defaults to.
func baselineBranch(getenv func(string) string) string {
	return cmp.Or(strings.TrimSpace(getenv("BENCHKITE_BASELINE_BRANCH")), strings.TrimSpace(getenv("BUILDKITE_PIPELINE_DEFAULT_BRANCH")))
}

// Run goes through the phases. Teardown, the summary and publishing
// always happen, also after a failure or a cancel, with what exists.
func (j *Job) Run(ctx context.Context) Result {
	j.sum.Started = j.now()
	if err := j.freshDir(); err != nil {
		// Nothing can run without a place for its results, but the
		// annotation, built in memory, still says why.
		fmt.Fprintf(j.log, "runner: %v\n", err)
		j.sum.Finished = j.now()
		judged := gate.Judgement{Verdict: summary.VerdictError, Problems: []string{err.Error()}}
		j.sum.Verdict, j.sum.Problems = judged.Verdict, judged.Problems
		j.sum.Failure = j.failure()
		j.phase(context.WithoutCancel(ctx), summary.PhasePublish, j.publish)
		j.finish(judged)
		return Result{Summary: j.sum, Failed: true, Verdict: summary.VerdictError, Exit: 1}
	}
	rec := j.res.Recipe
	fmt.Fprintf(j.log, "runner: %s on %s × %d, image %s\n", rec.Name, rec.GPU, rec.NumGPUs, j.res.Image.Image)

	r := &running{ok: true}
	defer func() {
		if r.cancel != nil {
			r.cancel()
		}
	}()
	for _, p := range script {
		p.run(j, ctx, r)
	}
	judged := r.judged
	j.finish(judged)
	return Result{Summary: j.sum, Failed: j.sum.Verdict != summary.VerdictPass, Verdict: j.sum.Verdict, Exit: judged.Exit()}
}

// accuracyPhase runs an accuracy phase (lm_eval, bfcl) the recipe has on
// the server the bench used. It asks the server first, also after a bench
// that passed: one that died (or was replaced) since must not leave the
// phase looking skipped.
func (j *Job) accuracyPhase(ctx context.Context, name string, planned, ready bool, fn func(context.Context) error) {
	switch {
	case !planned:
	case j.cfg.BenchOnly || j.res.Recipe.BenchOnly:
		j.skip(name, "bench only")
	case ctx.Err() != nil:
		j.notRun(ctx, name, "canceled")
	case !ready:
		j.notRun(ctx, name, "server not serving")
	default:
		if why := j.notServing(ctx, true); why != "" {
			j.notRun(ctx, name, why)
			fmt.Fprintf(j.log, "runner: %s not run: %s\n", name, why)
			return
		}
		j.phase(ctx, name, fn)
	}
}

// phase runs fn in a collapsed log group and records it. A failed phase's
// group is expanded so the reason is on screen.
func (j *Job) phase(ctx context.Context, name string, fn func(context.Context) error) bool {
	buildlog.Section(j.log, phaseTitle(name))
	p := summary.Phase{Name: name, Status: summary.StatusOK, Started: j.now()}
	err := fn(ctx)
	p.Finished = j.now()
	if err != nil {
		p.Status = summary.StatusFailed
		if ctx.Err() != nil {
			p.Status = summary.StatusCanceled
		}
		p.Error = err.Error()
		// A server that died while the phase ran took it down: its death
		// comes first, before what the phase's own process said of it
		// (a bench's "connection refused").
		if c := j.serverCause(); c != "" {
			j.cause = c
		}
		p.Cause = j.cause
		fmt.Fprintf(j.log, "runner: %s %s: %v\n", name, p.Status, err)
		if p.Cause != "" {
			fmt.Fprintf(j.log, "runner: %s cause: %s\n", name, strings.ReplaceAll(p.Cause, "\n", " ⏎ "))
		}
		buildlog.ExpandPrevious(j.log)
	}
	j.cause = ""
	j.sum.Phases = append(j.sum.Phases, p)
	return err == nil
}

// noteCause keeps a failed process's last error lines for the phase's
// record; the first failure of a phase is kept.
func (j *Job) noteCause(tail *proc.Tail) {
	if j.cause == "" && tail != nil {
		j.cause = causeOf(tail)
	}
}

// causeOf is a failed process's cause: the innermost exception of its
// last traceback, else its last error lines (proc.Tail.Cause).
func causeOf(tail *proc.Tail) string {
	if c := rootcause.Of(tail.Lines()); c != "" {
		return c
	}
	return tail.Cause()
}

// skip records a phase this run does not plan (bench only, an attached
// server): not an error.
func (j *Job) skip(name, why string) {
	j.sum.Phases = append(j.sum.Phases, summary.Phase{Name: name, Status: summary.StatusSkipped, Error: why})
}

// notRun records a planned phase that an earlier failure or a cancel kept
// from running: the run cannot pass without it.
func (j *Job) notRun(ctx context.Context, name, why string) {
	status := summary.StatusNotRun
	if ctx.Err() != nil {
		status = summary.StatusCanceled
	}
	j.sum.Phases = append(j.sum.Phases, summary.Phase{Name: name, Status: status, Error: why})
}

func phaseTitle(name string) string {
	switch name {
	case summary.PhaseTools:
		return ":package: evaluation tools"
	case summary.PhaseServe:
		return ":rocket: serve"
	case summary.PhaseReady:
		return ":hourglass: wait for the server"
	case summary.PhaseBench:
		return ":stopwatch: vllm bench serve"
	case summary.PhaseAIPerf:
		return ":stopwatch: aiperf"
	case summary.PhaseLMEval:
		return ":dart: lm_eval"
	case summary.PhaseBFCL:
		return ":hammer_and_wrench: bfcl"
	case summary.PhaseGate:
		return ":vertical_traffic_light: gates"
	case PhaseBuild:
		return ":building_construction: docker build"
	case summary.PhasePublish:
		return ":package: publish"
	}
	return name
}

// notServing says why the server can take no more work, or "" when it
// can. After a failure it asks the server: one dying under load may not
// have exited yet, and work sent to it would only fail again, slowly.
// A server found not serving is not asked again.
func (j *Job) notServing(ctx context.Context, afterFailure bool) string {
	if j.unserving == "" && afterFailure && !j.serverGone() {
		if err := j.stillServing(ctx); err != nil && !j.serverGone() {
			j.unserving = "server not serving: " + err.Error()
		}
	}
	if j.serverGone() {
		return "server exited"
	}
	return j.unserving
}

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

// verdict judges the run (gate.JudgeRun): a cancel is an error besides
// what the phases and gates say.
func (j *Job) verdict(ctx context.Context) gate.Judgement {
	canceled := ""
	if ctx.Err() != nil {
		canceled = context.Cause(ctx).Error()
	}
	return gate.JudgeRun(j.sum, canceled)
}

// finish prints the closing lines: the verdict, and every problem and
// failed gate with its reason, so the end of the log says what went wrong.
func (j *Job) finish(judged gate.Judgement) {
	var lines []string
	// What happened first leads: a server that died took down what
	// failed after it.
	if j.sum.Verdict != summary.VerdictPass && j.serverExit != "" {
		lines = append(lines, "server exited during the run: "+j.serverExit)
	}
	lines = append(lines, j.sum.Problems...)
	for _, g := range j.sum.Gates {
		if g.Verdict == summary.VerdictFail {
			lines = append(lines, "gate failed: "+g.Message)
		}
	}
	if p := j.sum.Phase(summary.PhasePublish); p != nil && p.Status == summary.StatusFailed {
		lines = append(lines, "publish failed: "+firstLine(p.Error))
	}
	switch j.sum.Verdict {
	case summary.VerdictPass:
		fmt.Fprintf(j.log, "+++ :white_check_mark: %s passed\n", j.res.Recipe.Name)
		return
	case summary.VerdictUnverified:
		fmt.Fprintf(j.log, "+++ :warning: %s: unverified (what was measured passed; what could not be checked follows)\n", j.res.Recipe.Name)
	case summary.VerdictFail:
		if judged.RegressionOnly {
			fmt.Fprintf(j.log, "+++ :warning: %s: regressed (soft-failed: the build's report fails the build unless its false-alarm budget releases it)\n", j.res.Recipe.Name)
			break
		}
		fmt.Fprintf(j.log, "+++ :x: %s: %s\n", j.res.Recipe.Name, j.sum.Verdict)
	default:
		if j.sum.Canceled != "" {
			// A cancel is what a person did, not what the run found.
			fmt.Fprintf(j.log, "+++ :x: %s: %s: canceled (%s)\n", j.res.Recipe.Name, j.sum.Verdict, j.sum.Canceled)
			break
		}
		fmt.Fprintf(j.log, "+++ :x: %s: %s\n", j.res.Recipe.Name, j.sum.Verdict)
	}
	for _, l := range lines {
		fmt.Fprintf(j.log, "  %s\n", l)
	}
}

// whileServing does every item in order: a failed one does not stop the
// next, but once the server has stopped serving the rest are skipped with
// the reason, and a cancel ends the loop. Errors are joined, each named.
func whileServing[T any](ctx context.Context, j *Job, items []T, name func(T) string, do func(T) error, skip func(T, string)) error {
	var errs []error
	for _, item := range items {
		if why := j.notServing(ctx, len(errs) > 0); why != "" {
			errs = append(errs, fmt.Errorf("%s; %s not run", why, name(item)))
			skip(item, why)
			continue
		}
		if err := do(item); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name(item), err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
