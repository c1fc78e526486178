package job

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/proc"
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

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
