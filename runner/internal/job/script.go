package job

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/ingest"
	"github.com/benchkite/benchkite/runner/internal/job/benchdriver"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
)

// script is the run, phase by phase, in order. Run walks it running each
// phase; plan walks it listing the processes each phase starts, built
// from the same spec functions. What `runner plan` prints is what Run
// starts by construction: a phase, or a change of order, is one line
// here for both.
var script = []scriptPhase{
	{summary.PhaseTools, (*Job).runTools, (*Job).planTools},
	{PhaseBuild, (*Job).runBuild, (*Job).planBuild},
	{summary.PhaseServe, (*Job).runServe, (*Job).planServe},
	{summary.PhaseReady, (*Job).runReady, (*Job).planReady},
	{summary.PhaseBench, (*Job).runBench, (*Job).planBench},
	{summary.PhaseAIPerf, (*Job).runAIPerf, (*Job).planAIPerfPhase},
	{summary.PhaseLMEval, (*Job).runLMEval, (*Job).planLMEval},
	{summary.PhaseBFCL, (*Job).runBFCL, (*Job).planBFCL},
	{"teardown", (*Job).runTeardown, (*Job).planTeardown},
	{summary.PhaseGate, (*Job).runGate, (*Job).planGate},
	{"provenance", (*Job).runProvenance, (*Job).planProvenance},
	{"summary", (*Job).runSummary, nil},
	{summary.PhasePublish, (*Job).runPublish, (*Job).planPublish},
}

// scriptPhase is one phase of the script: how Run runs it and how plan
// lists it (nil: it starts no process).
type scriptPhase struct {
	name string
	run  func(j *Job, ctx context.Context, r *running)
	plan func(j *Job, p *planList) error
}

// running is what the phases of one run hand on.
type running struct {
	// ok: the phases so far went well, so the server is up (or attached).
	ok    bool
	cache cacheMark
	// clean is teardown's and publishing's context, on its own clock: a
	// cancelled run's must fit in the agent's grace period.
	clean  context.Context
	cancel context.CancelFunc
	judged gate.Judgement
}

// planList is the processes plan lists, with notes by index.
type planList struct {
	specs []proc.Spec
	notes map[int]string
	// past are the recipes whose past nights are listed already: each
	// is downloaded once.
	past []string
}

func (p *planList) add(s proc.Spec, err error) error {
	p.specs = append(p.specs, s)
	return err
}

// alive is the question whether the container still runs: asked once it
// is ready, and again before each accuracy phase.
func (p *planList) alive(j *Job) error {
	if j.cfg.BaseURL != "" || j.res.Profile.Runtime != agents.Docker {
		return nil
	}
	return p.add(j.inspectSpec())
}

func (j *Job) runTools(ctx context.Context, r *running) {
	if j.runsAccuracy() || j.cfg.Tools == tools.ModePath {
		r.ok = j.phase(ctx, summary.PhaseTools, j.provision)
	}
}

func (j *Job) planTools(p *planList) error {
	if !j.runsAccuracy() {
		return nil
	}
	install, err := j.toolsPlan()
	if err != nil {
		return err
	}
	p.specs = append(p.specs, install...)
	return nil
}

func (j *Job) runBuild(ctx context.Context, r *running) {
	if r.ok && j.builds() {
		r.ok = j.phase(ctx, PhaseBuild, j.build)
	}
}

func (j *Job) planBuild(p *planList) error {
	if !j.builds() {
		return nil
	}
	return p.add(j.buildSpec())
}

func (j *Job) runServe(ctx context.Context, r *running) {
	switch {
	case !r.ok && j.sum.Phase(PhaseBuild) != nil:
		j.notRun(ctx, summary.PhaseServe, "image not built")
	case !r.ok:
		j.notRun(ctx, summary.PhaseServe, "tools not provisioned")
	case j.cfg.BaseURL == "":
		r.cache = j.modelCacheStart()
		r.ok = j.phase(ctx, summary.PhaseServe, j.serve)
	default:
		j.sum.Attached = j.baseURL
		j.skip(summary.PhaseServe, "attached to "+j.baseURL)
	}
}

func (j *Job) planServe(p *planList) error {
	if j.cfg.BaseURL != "" {
		return nil
	}
	serve, err := j.serveSpecs()
	if err != nil {
		return err
	}
	docker, err := j.env(childenv.Docker)
	if err != nil {
		return err
	}
	ps, err := j.pytestSpecs()
	if err != nil {
		return err
	}
	pytest := func() {
		p.specs = append(p.specs, ps.probe, ps.install)
		p.notes[len(p.specs)-1] = "only when the line above finds no importable pytest; the distributions of its lock that Python lacks arrive on stdin"
	}
	if len(serve) == 2 {
		list, _, _ := staleContainerSpecs(docker)
		p.specs = append(p.specs, list)
		p.specs = append(p.specs, serve...)
		pytest()
		p.specs = append(p.specs, *ps.release)
	} else {
		pytest()
		p.specs = append(p.specs, serve...)
	}
	return nil
}

func (j *Job) runReady(ctx context.Context, r *running) {
	if r.ok {
		r.ok = j.phase(ctx, summary.PhaseReady, j.ready)
		j.modelCacheDone(r.cache, r.ok)
	} else if p := j.sum.Phase(summary.PhaseTools); p != nil && p.Status != summary.StatusOK {
		j.notRun(ctx, summary.PhaseReady, "tools not provisioned")
	} else {
		j.notRun(ctx, summary.PhaseReady, "server did not start")
	}
}

func (j *Job) planReady(p *planList) error { return p.alive(j) }

func (j *Job) runBench(ctx context.Context, r *running) {
	switch {
	case len(j.res.BenchRuns) == 0:
	case ctx.Err() != nil:
		j.notRun(ctx, summary.PhaseBench, "canceled")
	case !r.ok:
		j.notRun(ctx, summary.PhaseBench, "server not ready")
	default:
		j.phase(ctx, summary.PhaseBench, j.bench)
	}
}

// planBench lists each run's repetitions and what the regression gate's
// alarm adds to them where there are past nights to raise it: a look at
// them, then the re-runs.
func (j *Job) planBench(p *planList) error {
	driver := len(j.res.BenchRuns) > 0 && !j.benchDriverOff()
	if driver {
		if err := p.add(j.benchDriverSpec()); err != nil {
			return err
		}
		p.notes[len(p.specs)-1] = "the bench driver: the bench runs below, one argv (as JSON) a line on its stdin, through vLLM's bench entry point in this one process"
	}
	for i, run := range j.res.BenchRuns {
		for rep := 1; rep <= run.Repetitions; rep++ {
			if err := p.add(j.benchSpec(run, rep)); err != nil {
				return err
			}
			if driver && i == 0 && rep == 1 {
				p.notes[len(p.specs)-1] = fmt.Sprintf("this and the bench runs after it go to the bench driver above; each starts as its own process only where the driver exits %d (no vllm.benchmarks.serve in that Python)", benchdriver.ExitNoEntryPoint)
			}
		}
		more := j.reruns(run, run.Repetitions)
		if more == 0 || !j.hasPast {
			continue
		}
		if err := p.pastNights(j, j.res.Recipe.Name); err != nil {
			return err
		}
		for k := 1; k <= more; k++ {
			if err := p.add(j.benchSpecTo(run, j.rerunFile(run, k))); err != nil {
				return err
			}
			p.notes[len(p.specs)-1] = "only when the regression gate raises the alarm on the repetitions above"
		}
	}
	return nil
}

func (j *Job) runAIPerf(ctx context.Context, r *running) {
	switch {
	case j.res.Recipe.AIPerf == nil:
	case ctx.Err() != nil:
		j.notRun(ctx, summary.PhaseAIPerf, "canceled")
	case !r.ok:
		j.notRun(ctx, summary.PhaseAIPerf, "server not ready")
	default:
		j.phase(ctx, summary.PhaseAIPerf, j.aiperf)
	}
}

func (j *Job) planAIPerfPhase(p *planList) error { return j.planAIPerf(p.add) }

func (j *Job) runLMEval(ctx context.Context, r *running) {
	j.accuracyPhase(ctx, summary.PhaseLMEval, len(j.res.Tasks) > 0, r.ok, j.lmeval)
}

func (j *Job) planLMEval(p *planList) error {
	if !j.runsAccuracy() || len(j.res.Tasks) == 0 {
		return nil
	}
	if err := p.alive(j); err != nil {
		return err
	}
	for _, t := range j.taskEntries() {
		if err := p.add(j.lmevalSpec(t.ResolvedTask, t.Dir)); err != nil {
			return err
		}
	}
	return nil
}

func (j *Job) runBFCL(ctx context.Context, r *running) {
	j.accuracyPhase(ctx, summary.PhaseBFCL, j.res.BFCL != nil, r.ok, j.bfclPhase)
}

func (j *Job) planBFCL(p *planList) error {
	if !j.runsAccuracy() {
		return nil
	}
	plans, err := j.bfclPlans()
	if err != nil {
		return err
	}
	if len(plans) > 0 {
		if err := p.alive(j); err != nil {
			return err
		}
	}
	for _, b := range plans {
		if err := p.add(j.bfclSpec(b)); err != nil {
			return err
		}
		p.notes[len(p.specs)-1] = b.String()
	}
	return nil
}

// runTeardown stops the server on the cleanup clock, which the phases
// after it share.
func (j *Job) runTeardown(ctx context.Context, r *running) {
	budget, canceled := cleanupTimeout, ctx.Err() != nil
	if canceled {
		budget = CleanupBudget
	}
	r.clean, r.cancel = context.WithTimeout(context.WithoutCancel(ctx), budget)
	j.teardown(r.clean, canceled)
}

func (j *Job) planTeardown(p *planList) error {
	if j.cfg.BaseURL != "" || j.res.Profile.Runtime != agents.Docker {
		return nil
	}
	env, err := j.env(childenv.Docker)
	if err != nil {
		return err
	}
	for _, argv := range containerCleanup(containerName(j.res, j.getenv), j.cfg.Grace) {
		p.specs = append(p.specs, proc.Spec{Argv: argv, Env: env})
	}
	return nil
}

func (j *Job) runGate(ctx context.Context, _ *running) {
	if ctx.Err() == nil {
		j.phase(ctx, summary.PhaseGate, j.gate)
	} else {
		j.notRun(ctx, summary.PhaseGate, "canceled")
	}
}

// planGate lists the history step's files the gates download
// (--history-step), for each recipe whose past nights they read and the
// bench's alarm has not read already.
func (j *Job) planGate(p *planList) error {
	for _, recipe := range j.pastRecipes() {
		if err := p.pastNights(j, recipe); err != nil {
			return err
		}
	}
	return nil
}

// pastNights lists the download of recipe's file from the history step
// (--history-step), when its nights are first asked for, and the look at
// the step's state that follows a download that found nothing.
func (p *planList) pastNights(j *Job, recipe string) error {
	h := j.historyStep
	if h == nil || slices.Contains(p.past, recipe) {
		return nil
	}
	p.past = append(p.past, recipe)
	bk, err := j.buildkite()
	if err != nil {
		return err
	}
	query, dest := h.Query(recipe)
	p.specs = append(p.specs, bk.Agent.DownloadSpec(query, dest, h.Step))
	p.notes[len(p.specs)-1] = recipe + "'s past nights, when first asked for"
	p.specs = append(p.specs, bk.Agent.StepStateSpec(h.Step))
	p.notes[len(p.specs)-1] = "only when the line above finds no file; while the step runs, both again every --history-poll, up to --history-wait"
	return nil
}

// pastRecipes are the recipes whose past nights the gate phase reads, in
// the order it first asks: the baseline_from recipes of the accuracy
// gates, then the recipe's own (its regressions and its trend).
func (j *Job) pastRecipes() []string {
	var out []string
	add := func(name string) {
		if name != "" && !slices.Contains(out, name) && name != j.res.Recipe.Name {
			out = append(out, name)
		}
	}
	for _, t := range j.res.Tasks {
		for _, e := range t.Expect {
			add(e.BaselineFrom)
		}
	}
	if b := j.res.BFCL; b != nil {
		for _, g := range b.Gates {
			add(g.Expect.BaselineFrom)
		}
	}
	return append(out, j.res.Recipe.Name)
}

func (j *Job) runProvenance(_ context.Context, r *running) { j.writeProvenance(r.clean) }

func (j *Job) planProvenance(p *planList) error {
	p.specs = append(p.specs, j.provenanceSpecs()...)
	return nil
}

// runSummary judges the run and writes its summary, before publishing
// uploads it.
func (j *Job) runSummary(ctx context.Context, r *running) {
	j.sum.Finished = j.now()
	r.judged = j.verdict(ctx)
	j.sum.Verdict, j.sum.Problems = r.judged.Verdict, r.judged.Problems
	if ctx.Err() != nil {
		j.sum.Canceled = context.Cause(ctx).Error()
	}
	j.sum.Failure = j.failure()
	j.account()
	if err := summary.Write(filepath.Join(j.dir, "summary.json"), j.sum); err != nil {
		fmt.Fprintf(j.log, "runner: write summary: %v\n", err)
	}
}

func (j *Job) runPublish(_ context.Context, r *running) {
	j.phase(r.clean, summary.PhasePublish, j.publish)
}

func (j *Job) planPublish(p *planList) error {
	publish, _, err := j.publishSpecs("success|warning|error", "", !coveredByStep(j.getenv, j.dir))
	if err != nil {
		return err
	}
	p.specs = append(p.specs, publish...)
	return p.ingestSecret(j)
}

// ingestSecret is the ingest token's secret, read for each sink a run
// posts to (perf-eval's dashboards first, then --ingest-url) when the
// job's environment holds no token for it.
func (p *planList) ingestSecret(j *Job) error {
	c, set := j.cfg, func(k string) bool { return strings.TrimSpace(j.getenv(k)) != "" }
	perfEval := c.IngestPerfEval && !set(ingestTokenEnv) && !set(ingest.PerfEvalTokenName)
	sink := c.IngestURL != "" && !set(ingestTokenEnv)
	for _, reads := range []bool{perfEval, sink} {
		if !reads || c.IngestSecret == "" {
			continue
		}
		bk, err := j.buildkite()
		if err != nil {
			return err
		}
		p.specs = append(p.specs, bk.Agent.SecretSpec(c.IngestSecret))
		if c.IngestNightlyOnly {
			p.notes[len(p.specs)-1] = "only for a scheduled night that did not fail and ran its own server (--ingest-nightly-only)"
		}
	}
	return nil
}
