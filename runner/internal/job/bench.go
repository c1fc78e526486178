package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// benchOut is the folder the bench writes into, under the results
// directory. On docker it is the only part of it the server's container
// mounts: a server cannot write lm_eval's or BFCL's results.
const benchOut = "bench"

// benchDir is benchOut, absolute: on docker the bench writes from inside
// the container, which mounts it at the same path.
func (j *Job) benchDir() string { return filepath.Join(j.absDir, benchOut) }

// benchFile is where one repetition of a run writes its result; with one
// repetition it is also the run's result.
func (j *Job) benchFile(run workloads.BenchRun, rep int) string {
	if run.Repetitions <= 1 {
		return filepath.Join(j.benchDir(), "bench-"+run.Name+".json")
	}
	return filepath.Join(j.benchDir(), "bench-"+run.Name+"-run-"+strconv.Itoa(rep)+".json")
}

// ownBenchFile checks that the bench's one new file in benchDir is the
// file it was told to write, written during its run: before is what the
// folder held when it started. Another new file, or the file already
// there before, means something else wrote there and which numbers are
// the bench's cannot be told.
func ownBenchFile(want string, before map[string]bool, w results.Window) error {
	dir := filepath.Dir(want)
	if before[filepath.Base(want)] {
		return fmt.Errorf("%w: %s existed before the bench ran", results.ErrNotOwn, want)
	}
	files, err := results.OwnFiles(dir, 0, func(base string) bool { return !before[base] }, w)
	if err != nil {
		return err
	}
	if len(files) != 1 || files[0] != filepath.Clean(want) {
		return fmt.Errorf("%w: the bench was to write %s; new in %s: %s", results.ErrNotOwn, filepath.Base(want), dir, orNone(files))
	}
	return nil
}

func orNone(files []string) string {
	if len(files) == 0 {
		return "nothing"
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	return strings.Join(names, ", ")
}

// dirNames is the set of names in dir (none when it does not exist).
func dirNames(dir string) (map[string]bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out, nil
}

// benchSpec is `vllm bench serve` for one repetition of one run: on the
// host natively, inside the server's container on docker (the host has no
// vLLM, and the bench then runs the vLLM version under test).
func (j *Job) benchSpec(run workloads.BenchRun, rep int) (proc.Spec, error) {
	return j.benchSpecTo(run, j.benchFile(run, rep))
}

// benchSpecTo is benchSpec writing its result to file.
func (j *Job) benchSpecTo(run workloads.BenchRun, file string) (proc.Spec, error) {
	res := j.res
	argv := []string{"vllm", "bench", "serve",
		"--backend", run.Backend,
		"--base-url", j.baseURL,
	}
	if run.Backend == "openai-chat" {
		argv = append(argv, "--endpoint", "/v1/chat/completions")
	}
	argv = append(argv, "--model", res.ServedModel())
	text, isText := workloads.RealTextDatasets[run.Dataset]
	if isText {
		// Real prompts from the model cache (--no-stream: datasets keeps
		// them there, as lm_eval keeps gsm8k), every answer output_len
		// tokens long.
		argv = append(argv,
			"--dataset-name", "hf",
			"--dataset-path", text.Path,
			"--hf-split", text.Split,
			"--no-stream",
			"--hf-output-len", strconv.Itoa(run.OutputLen),
		)
	} else {
		argv = append(argv,
			"--dataset-name", "random",
			"--random-input-len", strconv.Itoa(run.InputLen),
			"--random-output-len", strconv.Itoa(run.OutputLen),
		)
	}
	argv = append(argv,
		"--ignore-eos",
		"--num-prompts", strconv.Itoa(run.NumPrompts),
		"--max-concurrency", strconv.Itoa(run.Concurrency),
		// Greedy unless the recipe says otherwise: acceptance rates of
		// speculative decoding move with the sampling.
		"--temperature", strconv.FormatFloat(run.Temperature, 'g', -1, 64),
	)
	if res.TokenizerMode != "" {
		// Client and server count tokens alike.
		argv = append(argv, "--tokenizer-mode", res.TokenizerMode)
	}
	if res.Recipe.VLLM.Serve.TrustRemoteCode {
		argv = append(argv, "--trust-remote-code")
	}
	// End-to-end latency is not in vLLM's default metrics; a recipe may
	// choose its own set.
	if !slices.Contains(run.Args, "--percentile-metrics") {
		argv = append(argv, "--percentile-metrics", workloads.DefaultPercentileMetrics)
	}
	argv = append(argv, run.Args...)
	argv = append(argv, "--save-result", "--result-filename", file)
	var offline []childenv.Var
	if isText && j.hfOffline() {
		// The cluster reaches no hub: datasets must read its cache only,
		// and fail rather than try.
		offline = []childenv.Var{{Name: "HF_DATASETS_OFFLINE", Value: "1"}, {Name: "HF_HUB_OFFLINE", Value: "1"}}
	}
	if res.Profile.Runtime == agents.Docker && j.cfg.BaseURL == "" {
		exec := append([]string{"docker", "exec"}, j.hfTokenFlags()...)
		for _, v := range offline {
			exec = append(exec, "-e", v.Name+"="+v.Value)
		}
		argv = append(append(exec, containerName(res, j.getenv)), argv...)
		env, err := j.env(childenv.DockerBench)
		return proc.Spec{Argv: argv, Env: env}, err
	}
	runner := offline
	if isText {
		// The dataset lives in the server's model cache, as gsm8k does.
		if home := j.hfHome(); home != "" {
			runner = append(runner, childenv.Var{Name: "HF_HOME", Value: home})
		}
	}
	env, err := j.env(childenv.Bench, runner...)
	return proc.Spec{Argv: argv, Env: env, Confine: j.modelCode()}, err
}

// hfHome is the server's HF_HOME: the profile's cache unless the recipe
// sets its own.
func (j *Job) hfHome() string {
	for _, e := range j.res.Env {
		if e.Name == "HF_HOME" {
			return e.Value
		}
	}
	return j.res.Profile.HFCacheDir()
}

// hfOffline says whether the job may not reach the Hugging Face hub: the
// job's or the server's environment sets HF_HUB_OFFLINE or
// HF_DATASETS_OFFLINE.
func (j *Job) hfOffline() bool {
	on := func(v string) bool {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "1", "true", "yes", "on":
			return true
		}
		return false
	}
	for _, name := range []string{"HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"} {
		if j.getenv != nil && on(j.getenv(name)) {
			return true
		}
		for _, e := range j.res.Env {
			if e.Name == name && on(e.Value) {
				return true
			}
		}
	}
	return false
}

// ErrDatasetNotCached: a real-text dataset the bench needs is not in the
// model cache, and the job may not fetch it.
var ErrDatasetNotCached = errors.New("dataset not in the model cache")

// checkDatasetCache fails, before any request, a real-text run whose
// dataset an offline job would have to fetch: where datasets keeps it
// (datasets/<org>___<name>, or the hub's datasets--<org>--<name>) in the
// model cache. A docker volume the host cannot look into is left to the
// bench, which then fails in datasets' own words.
func (j *Job) checkDatasetCache(run workloads.BenchRun) error {
	text, ok := workloads.RealTextDatasets[run.Dataset]
	if !ok || !j.hfOffline() || (j.res.Profile.Runtime == agents.Docker && j.res.Profile.HFHome == "") {
		return nil
	}
	cache := j.hfHome()
	for _, dir := range []string{
		filepath.Join(cache, "datasets", strings.ReplaceAll(text.Path, "/", "___")),
		filepath.Join(cache, "hub", "datasets--"+strings.ReplaceAll(text.Path, "/", "--")),
	} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return nil
		}
	}
	return fmt.Errorf("%w: %s (%s) is not under %s and the job is offline (HF_HUB_OFFLINE), so the bench may not fetch it; run the recipe once where the hub is reachable, or copy the dataset into that cache", ErrDatasetNotCached, run.Dataset, text.Path, cache)
}

// bench runs every expanded run, repetitions in order. A failed run does
// not stop the others unless the server has gone, or unless it was the
// first point of its config's sweep (the canary, lowest concurrency):
// then the server cannot serve that load at all, and the config's other,
// heavier points are recorded not-run instead of failing one by one.
func (j *Job) bench(ctx context.Context) error {
	canary := map[string]bool{}        // configs whose first point has run
	failed := map[string]string{}      // configs whose canary failed: why
	took := map[string]time.Duration{} // how long each canary took
	runs := j.newBenchSession()
	defer runs.close()
	return whileServing(ctx, j, j.res.BenchRuns,
		func(run workloads.BenchRun) string { return run.Name },
		func(run workloads.BenchRun) error {
			if why, ok := failed[run.Config]; ok {
				j.sum.Bench = append(j.sum.Bench, summary.BenchRun{Name: run.Name, Config: run.Config, Concurrency: run.Concurrency,
					Status: summary.StatusNotRun, Error: why})
				saved := took[run.Config].Seconds() * float64(max(j.res.Recipe.NumGPUs, 1))
				j.canarySaved += saved
				fmt.Fprintf(j.log, "runner: %s not run: %s; about %.2f GPU-h saved\n", run.Name, why, saved/3600)
				return nil
			}
			first := !canary[run.Config]
			canary[run.Config] = true
			start := time.Now()
			br, err := j.benchRun(ctx, runs, run)
			j.sum.Bench = append(j.sum.Bench, br)
			if err != nil && first && ctx.Err() == nil {
				took[run.Config] = time.Since(start)
				failed[run.Config] = fmt.Sprintf("canary %s failed: %s", run.Name, firstLine(err.Error()))
			}
			return err
		},
		func(run workloads.BenchRun, why string) {
			j.sum.Bench = append(j.sum.Bench, summary.BenchRun{Name: run.Name, Config: run.Config, Status: summary.StatusNotRun, Error: why})
		})
}

func (j *Job) benchRun(ctx context.Context, runs *benchSession, run workloads.BenchRun) (summary.BenchRun, error) {
	br := summary.BenchRun{
		Name: run.Name, Config: run.Config, Concurrency: run.Concurrency, NumPrompts: run.NumPrompts,
		InputLen: run.InputLen, OutputLen: run.OutputLen, Repetitions: run.Repetitions, Backend: run.Backend,
		Temperature: &run.Temperature, Status: summary.StatusFailed,
	}
	fail := func(err error) (summary.BenchRun, error) {
		br.Error = err.Error()
		if ctx.Err() != nil {
			br.Status = summary.StatusCanceled
		}
		return br, err
	}
	logf, err := os.Create(filepath.Join(j.dir, "bench-"+run.Name+".log"))
	if err != nil {
		return fail(fmt.Errorf("create bench log: %w", err))
	}
	defer logf.Close()
	tail := proc.NewTail(40)
	out := io.MultiWriter(j.log, logf, tail)
	if err := os.MkdirAll(j.benchDir(), 0o755); err != nil {
		return fail(fmt.Errorf("create bench folder: %w", err))
	}
	if err := j.checkDatasetCache(run); err != nil {
		fmt.Fprintf(j.log, "runner: %s: %v\n", run.Name, err)
		return fail(err)
	}
	var reps []results.BenchResult
	for rep := 1; rep <= run.Repetitions; rep++ {
		b, err := j.benchRepetition(ctx, runs, run, rep, out, tail)
		if err != nil {
			return fail(err)
		}
		reps = append(reps, b)
	}
	reps, reruns, err := j.rerunOnAlarm(ctx, runs, run, reps, out)
	if err != nil {
		return fail(err)
	}
	merged, err := results.MedianOf(reps)
	if err != nil {
		return fail(err)
	}
	file, err := j.writeBenchMedian(run, len(reps), merged)
	if err != nil {
		return fail(err)
	}
	sum := j.benchRunSummary(run, merged, file)
	sum.RepetitionValues = j.repetitionValues(run, reps)
	sum.Repetitions, sum.Reruns = len(reps), reruns
	fmt.Fprintf(j.log, "runner: %s: %s output tok/s (%s per GPU), median TTFT %s ms, median TPOT %s ms\n",
		run.Name, numfmt.Num(sum.OutputThroughput, numfmt.TokensPerSec), numfmt.Num(sum.OutputThroughputPerGPU, numfmt.TokensPerSec),
		numfmt.Num(sum.TTFT.Median, numfmt.Millis), numfmt.Num(sum.TPOT.Median, numfmt.Millis))
	return sum, nil
}

// benchRepetition runs repetition rep of a bench run and reads its result,
// refusing a file the bench did not write in this repetition, a run that
// dropped requests, and a file that says other than what the bench
// printed.
func (j *Job) benchRepetition(ctx context.Context, runs *benchSession, run workloads.BenchRun, rep int, out io.Writer, tail *proc.Tail) (results.BenchResult, error) {
	spec, err := j.benchSpec(run, rep)
	if err != nil {
		return results.BenchResult{}, err
	}
	// What the bench prints of its result reaches the runner only
	// through this pipe: the file must say the same.
	printed := &results.Printed{}
	spec.Stdout, spec.Stderr = io.MultiWriter(out, printed), out
	before, err := dirNames(j.benchDir())
	if err != nil {
		return results.BenchResult{}, fmt.Errorf("repetition %d: %w", rep, err)
	}
	w := results.Window{Start: time.Now()}
	err = runs.run(ctx, spec)
	w.End = time.Now()
	if err != nil {
		j.noteCause(tail)
		return results.BenchResult{}, fmt.Errorf("repetition %d: %w", rep, err)
	}
	file := j.benchFile(run, rep)
	if err := ownBenchFile(file, before, w); err != nil {
		return results.BenchResult{}, fmt.Errorf("repetition %d: %w", rep, err)
	}
	b, err := results.ParseBenchFile(file)
	if err != nil {
		return results.BenchResult{}, fmt.Errorf("repetition %d: %w", rep, err)
	}
	// A run that dropped requests measured a different load; its
	// numbers are not comparable, whatever they say.
	if err := b.Valid(run.NumPrompts); err != nil {
		return results.BenchResult{}, fmt.Errorf("repetition %d: %w", rep, err)
	}
	if err := printed.Check(b); err != nil {
		return results.BenchResult{}, fmt.Errorf("repetition %d: %s: %w", rep, filepath.Base(file), err)
	}
	return b, nil
}

// writeBenchMedian is the file of a bench run's result: the bench's own
// for one repetition, else the median of reps, written beside it.
func (j *Job) writeBenchMedian(run workloads.BenchRun, reps int, merged results.BenchResult) (string, error) {
	if reps <= 1 {
		return j.benchFile(run, 1), nil
	}
	file := filepath.Join(j.dir, "bench-"+run.Name+".json")
	data, err := merged.MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("write median: %w", err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return "", fmt.Errorf("write median: %w", err)
	}
	return file, nil
}

// benchRunSummary is the summary of a bench run's merged result, read
// from file.
func (j *Job) benchRunSummary(run workloads.BenchRun, merged results.BenchResult, file string) summary.BenchRun {
	sum := summary.FromBench(run.Name, merged, j.res.Recipe.NumGPUs)
	sum.Config, sum.Concurrency, sum.NumPrompts = run.Config, run.Concurrency, run.NumPrompts
	sum.InputLen, sum.OutputLen, sum.Repetitions, sum.Backend = run.InputLen, run.OutputLen, run.Repetitions, run.Backend
	sum.Temperature = &run.Temperature
	// Relative to the results directory: the bench's own file in its
	// folder, or the median the runner wrote beside it.
	sum.File = filepath.Base(file)
	if run.Repetitions <= 1 {
		sum.File = benchOut + "/" + sum.File
	}
	return sum
}

// repetitionValues are the gated metrics' values of every repetition, for
// the regression detector and the spread people see; nil with one
// repetition, whose value is the run's.
func (j *Job) repetitionValues(run workloads.BenchRun, reps []results.BenchResult) map[string][]float64 {
	b := j.res.Recipe.Bench
	if len(reps) < 2 || b == nil {
		return nil
	}
	var policy *workloads.Regression
	for i := range b.Configs {
		if b.Configs[i].Name == run.Config {
			policy = b.RegressionFor(&b.Configs[i])
		}
	}
	if policy == nil {
		return nil
	}
	out := map[string][]float64{}
	for _, m := range policy.Metrics {
		var values []float64
		for _, r := range reps {
			v, ok := r.Numeric[m.Metric]
			if !ok {
				values = nil
				break
			}
			values = append(values, v)
		}
		if values != nil {
			out[m.Metric] = values
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
