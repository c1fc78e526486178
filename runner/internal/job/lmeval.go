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
	"time"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// lmevalSpec is lm_eval for one task against the server's completions
// endpoint, from the provisioned tools.
func (j *Job) lmevalSpec(t workloads.ResolvedTask, dir string) (proc.Spec, error) {
	args := []string{"model=" + j.res.ServedModel(), "base_url=" + j.baseURL + "/v1/completions"}
	backend := false
	for _, a := range t.ModelArgs {
		args = append(args, a.Key+"="+a.Value)
		backend = backend || a.Key == "tokenizer_backend"
	}
	if !backend {
		// lm_eval's default backend imports transformers, which the
		// locked tool set leaves out; without a tokenizer lm_eval sends
		// text and the server tokenizes.
		args = append(args, "tokenizer_backend=None")
	}
	tl := j.expectedTools()
	env, err := j.env(childenv.LMEval, tl.Env...)
	return proc.Spec{Argv: []string{tl.LMEval,
		"--model", "local-completions",
		"--model_args", strings.Join(args, ","),
		"--tasks", t.Name,
		"--num_fewshot", strconv.Itoa(t.NumFewshot),
		"--log_samples",
		"--output_path", filepath.Join(j.dir, dir),
	}, Env: env, Confine: j.modelCode()}, err
}

// taskEntry is one lm_eval task entry of the recipe with the folder its
// results go to; entries of one task name have folders of their own.
type taskEntry struct {
	workloads.ResolvedTask
	Dir string
}

// taskEntries pairs every task entry with its folder (contract.TaskDirs).
func (j *Job) taskEntries() []taskEntry {
	names := make([]string, len(j.res.Tasks))
	for i, t := range j.res.Tasks {
		names[i] = t.Name
	}
	dirs := contract.TaskDirs(names)
	out := make([]taskEntry, len(j.res.Tasks))
	for i, t := range j.res.Tasks {
		out[i] = taskEntry{t, dirs[i]}
	}
	return out
}

// lmeval runs every task; one failing does not stop the next.
func (j *Job) lmeval(ctx context.Context) error {
	return whileServing(ctx, j, j.taskEntries(),
		func(t taskEntry) string { return t.Dir },
		func(t taskEntry) error {
			tr, err := j.lmevalTask(ctx, t)
			j.sum.Accuracy = append(j.sum.Accuracy, tr)
			return err
		},
		func(t taskEntry, why string) {
			j.sum.Accuracy = append(j.sum.Accuracy, summary.TaskResult{Task: t.Name, Entry: t.Dir, NumFewshot: t.NumFewshot, Status: summary.StatusNotRun, Error: why})
		})
}

func (j *Job) lmevalTask(ctx context.Context, t taskEntry) (summary.TaskResult, error) {
	tr := summary.TaskResult{Task: t.Name, Entry: t.Dir, NumFewshot: t.NumFewshot, Status: summary.StatusFailed}
	fail := func(err error) (summary.TaskResult, error) {
		tr.Error = err.Error()
		if ctx.Err() != nil {
			tr.Status = summary.StatusCanceled
		}
		return tr, err
	}
	// A folder of its own, empty when lm_eval starts: only what this
	// entry's lm_eval writes during its run is read.
	outDir := filepath.Join(j.dir, t.Dir)
	if err := results.EmptyDir(outDir); err != nil {
		return fail(err)
	}
	logf, err := os.Create(filepath.Join(j.dir, "lm_eval-"+t.Dir+".log"))
	if err != nil {
		return fail(fmt.Errorf("create lm_eval log: %w", err))
	}
	defer logf.Close()
	tail := proc.NewTail(40)
	out := io.MultiWriter(proc.NewPrefixWriter(j.log, "[lm_eval] "), logf, tail)
	// The table lm_eval prints on its own stdout is what its results
	// file must say: the file is on disk, where a native server can
	// rewrite it in place.
	table := &results.LMEvalTable{}
	w, err := j.runLMEvalTask(ctx, t, io.MultiWriter(out, table), out, tail)
	if err != nil {
		return fail(err)
	}
	// lm_eval writes <output_path>/<model>/results_<date>.json: exactly
	// one, written during its run.
	file, err := results.OwnFile(outDir, 1, "lm_eval results_<date>.json", results.IsLMEvalResults, w)
	if err != nil {
		return fail(fmt.Errorf("find lm_eval results: %w", err))
	}
	r, err := results.ParseLMEvalFile(file)
	if err != nil {
		return fail(err)
	}
	tr = j.lmevalTaskResult(t, file, r, table)
	if tr.Status != summary.StatusOK {
		tr.Error = file + ": " + tr.Error
		return tr, errors.New(tr.Error)
	}
	for _, k := range summary.SortedKeys(tr.Metrics) {
		fmt.Fprintf(j.log, "runner: %s %s = %.4f\n", t.Name, k, tr.Metrics[k])
	}
	j.noteOutcomes(t, outDir, w)
	return tr, nil
}

// runLMEvalTask runs lm_eval for one task entry within the recipe's time
// limit, and returns when it ran.
func (j *Job) runLMEvalTask(ctx context.Context, t taskEntry, stdout, stderr io.Writer, tail *proc.Tail) (results.Window, error) {
	spec, err := j.lmevalSpec(t.ResolvedTask, t.Dir)
	if err != nil {
		return results.Window{}, err
	}
	spec.Stdout, spec.Stderr = stdout, stderr
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(spec.Argv))
	limit := j.res.Recipe.LMEvalTimeout()
	runCtx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("%w: lm_eval %s ran past its %s limit (lm_eval.timeout_minutes)", errTimeLimit, t.Name, limit))
	defer cancel()
	w := results.Window{Start: time.Now()}
	err = j.procs.Run(runCtx, spec)
	w.End = time.Now()
	if err != nil {
		j.noteCause(tail)
		return w, err
	}
	return w, nil
}

// lmevalTaskResult is a task entry's result as read from file: failed
// when a gated metric is missing from it, or when it says other than the
// table lm_eval printed.
func (j *Job) lmevalTaskResult(t taskEntry, file string, r results.LMEvalResult, table *results.LMEvalTable) summary.TaskResult {
	tr := summary.FromLMEval(t.Name, t.NumFewshot, r)
	tr.Entry = t.Dir
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
	if tr.Status == summary.StatusOK {
		if err := table.Check(t.Name, r.Tasks[t.Name].Alias, tr.Metrics); err != nil {
			tr.Status, tr.Metrics, tr.Stderr = summary.StatusFailed, nil, nil
			tr.Error = err.Error()
		}
	}
	return tr
}

// noteOutcomes keeps a task entry's per-question outcomes and says where;
// when it cannot, it says why, and the paired gate says so where it needs
// them.
func (j *Job) noteOutcomes(t taskEntry, outDir string, w results.Window) {
	if n, err := keepOutcomes(t, outDir, j.dir, w); err != nil {
		fmt.Fprintf(j.log, "runner: %s: no per-question outcomes: %v\n", t.Dir, err)
	} else {
		fmt.Fprintf(j.log, "runner: %s: per-question outcomes of %d documents in %s\n", t.Dir, n, filepath.Join(outDir, baseline.OutcomesFile))
	}
}

// keepOutcomes reduces the samples lm_eval logged during its run (its
// own one samples_<task>_<date>.jsonl) to the compact per-question file
// the paired test and the history step read, and returns how many
// documents it holds.
func keepOutcomes(t taskEntry, outDir, resultsDir string, w results.Window) (int, error) {
	file, err := results.OwnFile(outDir, 1, "samples_"+t.Name+"_<date>.jsonl", func(base string) bool {
		_, ok := paired.SamplesDate(base, t.Name)
		return ok
	}, w)
	if err != nil {
		return 0, err
	}
	samples, err := paired.ReadFile(file)
	if err != nil {
		return 0, err
	}
	o := baseline.OutcomesOf(t.Name, samples)
	if rel, err := filepath.Rel(resultsDir, file); err == nil {
		o.Artifact = filepath.ToSlash(rel)
	}
	if err := baseline.WriteOutcomesFile(filepath.Join(outDir, baseline.OutcomesFile), o); err != nil {
		return 0, err
	}
	return len(o.DocHashes), nil
}

// errTimeLimit marks a tool stopped by its own time limit from the recipe.
var errTimeLimit = errors.New("time limit")
