package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// lmevalSpec is lm_eval for one task against the server's completions
// endpoint, from the provisioned tools.
func (j *Job) lmevalSpec(t workloads.ResolvedTask) (proc.Spec, error) {
	args := []string{"model=" + j.res.ServedModel(), "base_url=" + j.baseURL + "/v1/completions"}
	for _, a := range t.ModelArgs {
		args = append(args, a.Key+"="+a.Value)
	}
	tl := j.expectedTools()
	env, err := j.env(childenv.LMEval, tl.Env...)
	return proc.Spec{Argv: []string{tl.LMEval,
		"--model", "local-completions",
		"--model_args", strings.Join(args, ","),
		"--tasks", t.Name,
		"--num_fewshot", strconv.Itoa(t.NumFewshot),
		"--log_samples",
		"--output_path", filepath.Join(j.dir, t.Name),
	}, Env: env}, err
}

// lmeval runs every task; one failing does not stop the next.
func (j *Job) lmeval(ctx context.Context) error {
	return whileServing(ctx, j, j.res.Tasks,
		func(t workloads.ResolvedTask) string { return t.Name },
		func(t workloads.ResolvedTask) error {
			tr, err := j.lmevalTask(ctx, t)
			j.sum.Accuracy = append(j.sum.Accuracy, tr)
			return err
		},
		func(t workloads.ResolvedTask, why string) {
			j.sum.Accuracy = append(j.sum.Accuracy, summary.TaskResult{Task: t.Name, NumFewshot: t.NumFewshot, Status: summary.StatusNotRun, Error: why})
		})
}

func (j *Job) lmevalTask(ctx context.Context, t workloads.ResolvedTask) (summary.TaskResult, error) {
	tr := summary.TaskResult{Task: t.Name, NumFewshot: t.NumFewshot, Status: summary.StatusFailed}
	fail := func(err error) (summary.TaskResult, error) {
		tr.Error = err.Error()
		return tr, err
	}
	outDir := filepath.Join(j.dir, t.Name)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fail(err)
	}
	logf, err := os.Create(filepath.Join(j.dir, "lm_eval-"+t.Name+".log"))
	if err != nil {
		return fail(fmt.Errorf("create lm_eval log: %w", err))
	}
	defer logf.Close()
	tail := proc.NewTail(40)
	out := io.MultiWriter(proc.NewPrefixWriter(j.log, "[lm_eval] "), logf, tail)
	spec, err := j.lmevalSpec(t)
	if err != nil {
		return fail(err)
	}
	spec.Stdout, spec.Stderr = out, out
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(spec.Argv))
	limit := j.res.Recipe.LMEvalTimeout()
	runCtx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("%w: lm_eval %s ran past its %s limit (lm_eval.timeout_minutes)", errTimeLimit, t.Name, limit))
	defer cancel()
	if err := j.procs.Run(runCtx, spec); err != nil {
		j.noteCause(tail)
		return fail(err)
	}
	file, err := results.FindLMEvalResults(outDir)
	if err != nil {
		return fail(err)
	}
	r, err := results.ParseLMEvalFile(file)
	if err != nil {
		return fail(err)
	}
	tr = summary.FromLMEval(t.Name, t.NumFewshot, r)
	if rel, err := filepath.Rel(j.dir, file); err == nil {
		tr.File = rel
	}
	if tr.Status == summary.StatusOK {
		// A gated metric the file lacks is no score: say which.
		var missing []string
		for _, e := range t.Expect {
			if _, ok := tr.Metrics[e.Metric]; !ok {
				missing = append(missing, fmt.Sprintf("%q", e.Metric))
			}
		}
		if len(missing) > 0 {
			tr.Status = summary.StatusFailed
			tr.Error = fmt.Sprintf("no key %s for task %q", strings.Join(missing, ", "), t.Name)
		}
	}
	if tr.Status != summary.StatusOK {
		tr.Error = file + ": " + tr.Error
		return tr, errors.New(tr.Error)
	}
	for _, k := range summary.SortedKeys(tr.Metrics) {
		fmt.Fprintf(j.log, "runner: %s %s = %.4f\n", t.Name, k, tr.Metrics[k])
	}
	return tr, nil
}

// errTimeLimit marks a tool stopped by its own time limit from the recipe.
var errTimeLimit = errors.New("time limit")
