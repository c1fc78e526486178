package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/bfcl"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
)

// bfclDir holds the BFCL driver and one project root per category.
const bfclDir = "bfcl"

// driverVars are the driver's Python settings: output reaches the job log
// as it happens, and no bytecode lands in the venv.
var driverVars = []childenv.Var{{Name: "PYTHONUNBUFFERED", Value: "1"}, {Name: "PYTHONDONTWRITEBYTECODE", Value: "1"}}

// bfclPlans are the recipe's BFCL category runs with their settings, env
// overrides applied; none when the recipe has no bfcl block.
func (j *Job) bfclPlans() ([]bfcl.Plan, error) {
	if j.res.BFCL == nil {
		return nil, nil
	}
	return bfcl.Plans(j.res.BFCL, j.getenv)
}

// bfclSpec is the driver run of one category, from the provisioned tools.
func (j *Job) bfclSpec(p bfcl.Plan) (proc.Spec, error) {
	tl := j.expectedTools()
	python := tl.Python
	if python == "" {
		python = "python3"
	}
	argv, err := bfcl.Argv(p, filepath.Join(j.dir, bfclDir), python)
	if err != nil {
		return proc.Spec{}, err
	}
	env, err := j.env(childenv.BFCL, append(append([]childenv.Var(nil), tl.Env...), driverVars...)...)
	return proc.Spec{Argv: argv, Env: env, Dir: filepath.Join(j.absDir, bfclDir, p.Category), Confine: j.modelCode()}, err
}

// bfclPhase runs every category on the server lm_eval used; one failing
// does not stop the next.
func (j *Job) bfclPhase(ctx context.Context) error {
	plans, err := j.bfclPlans()
	if err != nil {
		return err
	}
	return whileServing(ctx, j, plans,
		func(p bfcl.Plan) string { return p.Name() },
		func(p bfcl.Plan) error {
			trs, err := j.bfclRun(ctx, p)
			j.sum.Accuracy = append(j.sum.Accuracy, trs...)
			return err
		},
		func(p bfcl.Plan, why string) {
			j.sum.Accuracy = append(j.sum.Accuracy, summary.TaskResult{Task: p.Name(), Entry: bfcl.EntryOf(p.Category), Status: summary.StatusSkipped, Error: why})
		})
}

func (j *Job) bfclRun(ctx context.Context, p bfcl.Plan) ([]summary.TaskResult, error) {
	fail := func(err error) ([]summary.TaskResult, error) {
		tr := bfcl.FailedTaskResult(p, err)
		if ctx.Err() != nil {
			tr.Status = summary.StatusCanceled
		}
		return []summary.TaskResult{tr}, err
	}
	fmt.Fprintf(j.log, "runner: %s\n", p.String())
	if torch := p.NeedsTorch(); len(torch) > 0 && j.tools.Mode != tools.ModePath {
		return fail(fmt.Errorf("%s imports sentence-transformers and torch, which the locked BFCL tool set leaves out (internal/toollocks/lm-eval-bfcl.in)", strings.Join(torch, ", ")))
	}
	spec, err := j.bfclSpec(p)
	if err != nil {
		return fail(err)
	}
	job, err := bfcl.Prepare(p, filepath.Join(j.dir, bfclDir), spec.Argv[0], bfcl.Server{URL: j.baseURL, Model: j.res.ServedModel()}, j.getenv)
	if err != nil {
		return fail(err)
	}
	logf, err := os.Create(filepath.Join(j.dir, "bfcl-"+p.Category+".log"))
	if err != nil {
		return fail(fmt.Errorf("create bfcl log: %w", err))
	}
	defer logf.Close()
	tail := proc.NewTail(10)
	out := io.MultiWriter(proc.NewPrefixWriter(j.log, "[bfcl] "), logf, tail)
	spec.Stdout, spec.Stderr = out, out
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(spec.Argv))
	limit := j.res.Recipe.BFCLTimeout()
	runCtx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("%w: BFCL %s ran past its %s limit (bfcl.timeout_minutes)", errTimeLimit, p.Category, limit))
	defer cancel()
	if err := j.procs.Run(runCtx, spec); err != nil {
		j.noteCause(tail)
		// BFCL's traceback says why; its last lines go with the error.
		return fail(fmt.Errorf("%w\n%s", err, strings.Join(tail.Lines(), "\n")))
	}
	r, err := bfcl.ReadResult(job)
	if err != nil {
		return fail(err)
	}
	trs := r.TaskResults()
	for _, tr := range trs {
		fmt.Fprintf(j.log, "runner: %s acc = %.4f\n", tr.Task, tr.Metrics[bfcl.MetricAcc])
	}
	return trs, nil
}
