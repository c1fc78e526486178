package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/internal/toollocks"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/benchkite/benchkite/workloads"
)

// AIPerfPackage is the aiperf release the runner installs for native
// runs. It is a tool set of its own, in a venv beside the evaluation
// tools': its dependencies (transformers, datasets, pandas, plotting)
// would triple the lm-eval venv for the recipes that never use it.
var AIPerfPackage = tools.Package{Name: "aiperf", Version: "0.13.0"}

// aiperfDir is where a config's artifacts go; absolute, because on docker
// aiperf writes them from inside the container, which mounts the results
// directory at the same path.
func (j *Job) aiperfDir(c workloads.AIPerfConfig) string {
	return filepath.Join(j.absDir, "aiperf-"+c.Name)
}

// aiperfToolsDir is where the aiperf venv goes: the evaluation tools' directory.
func (j *Job) aiperfToolsDir() string {
	dir := j.cfg.ToolsDir
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// aiperfSet is aiperf's locked tool set; its venv sits beside lm-eval's
// in the tools directory, named by its lock.
func aiperfSet() tools.Set {
	l := toollocks.AIPerf()
	return tools.Set{Name: l.Name, Lock: l.Text, Packages: []tools.Package{AIPerfPackage}}
}

// aiperfVenv is the venv the aiperf set is published at.
func (j *Job) aiperfVenv() string { return filepath.Join(j.aiperfToolsDir(), aiperfSet().Key()) }

// aiperfInContainer: on docker hosts aiperf runs in the server's
// container.
func (j *Job) aiperfInContainer() bool {
	return j.res.Profile.Runtime == agents.Docker && j.cfg.BaseURL == ""
}

// aiperfProbe prints "aiperf VERSION" when aiperf imports in the
// container's Python, else "aiperf - WHY", then "dist NAME VERSION" for
// each distribution named (VERSION "-" when absent): pytestProbe's
// answer, for the same parser.
var aiperfProbe = importProbe("aiperf", `version("aiperf")`)

// containerAIPerf makes aiperf importable in the server's container:
// nothing when the image has it, else the distributions of its hashed
// lock (internal/toollocks/aiperf.txt) the image lacks are installed, as
// the pytest step installs pytest; those the image has at other versions
// are the server's and left alone. Stock vLLM images do not ship aiperf.
func (j *Job) containerAIPerf(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pytestTimeout)
	defer cancel()
	name := containerName(j.res, j.getenv)
	env, err := j.env(childenv.Docker)
	if err != nil {
		return err
	}
	lock := toollocks.AIPerf()
	entries := parseLock(lock.Text)
	probe := proc.Spec{Argv: append([]string{"docker", "exec", name, "python3", "-c", aiperfProbe}, lockNames(entries)...), Env: env}
	python := "docker exec " + name + " python3"
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(probe.Argv))
	st, err := j.probeTool(ctx, probe, "aiperf")
	if err != nil {
		return fmt.Errorf("aiperf: ask %s: %w", python, err)
	}
	if st.version != "" {
		fmt.Fprintf(j.log, "runner: aiperf %s imports in %s; nothing installed\n", st.version, python)
		return nil
	}
	missing := st.lacking(entries)
	if len(missing) == 0 {
		return fmt.Errorf("aiperf: %s cannot import aiperf (%s), yet it has every distribution of the lock; nothing to install", python, st.why)
	}
	fmt.Fprintf(j.log, "runner: aiperf does not import in %s (%s); installing %d distribution(s) from its lock (%s)\n", python, st.why, len(missing), lock.Key())
	install, err := j.containerPip(name)
	if err != nil {
		return err
	}
	if err := j.installFromLock(ctx, install, missing, python, lock); err != nil {
		return err
	}
	after, err := j.probeTool(ctx, probe, "aiperf")
	if err != nil {
		return fmt.Errorf("aiperf: ask %s after the install: %w", python, err)
	}
	if after.version == "" {
		return fmt.Errorf("aiperf: pip installed it, but %s still cannot import aiperf: %s", python, after.why)
	}
	fmt.Fprintf(j.log, "runner: installed aiperf %s into %s\n", after.version, python)
	return nil
}

// aiperfBin is the aiperf the job runs: the image's on docker, else the
// venv's, else PATH's under --tools path.
func (j *Job) aiperfBin() string {
	if j.aiperfInContainer() {
		return "aiperf"
	}
	if j.cfg.Tools == tools.ModePath {
		return "aiperf"
	}
	return filepath.Join(j.aiperfVenv(), "bin", "aiperf")
}

// aiperfSpec is `aiperf profile` for one config against the job's server:
// the runner's flags first, then the recipe's, each list item a repeated
// flag.
func (j *Job) aiperfSpec(c workloads.AIPerfConfig) (proc.Spec, error) {
	res := j.res
	argv := []string{j.aiperfBin(), "profile",
		"--model", res.ServedModel(),
		"--tokenizer", res.Recipe.VLLM.Model,
		"--url", j.baseURL,
		"--output-artifact-dir", j.aiperfDir(c),
	}
	for _, a := range c.Args {
		if len(a.Values) == 0 {
			argv = append(argv, a.Flag)
		}
		for _, v := range a.Values {
			argv = append(argv, a.Flag, v)
		}
	}
	if res.Profile.Runtime == agents.Docker && j.cfg.BaseURL == "" {
		exec := append([]string{"docker", "exec"}, j.hfTokenFlags()...)
		argv = append(append(exec, containerName(res, j.getenv)), argv...)
		env, err := j.env(childenv.DockerBench)
		return proc.Spec{Argv: argv, Env: env}, err
	}
	var extra []childenv.Var
	if j.cfg.Tools != tools.ModePath {
		dir := j.aiperfVenv()
		path := filepath.Join(dir, "bin")
		if p := j.getenv("PATH"); p != "" {
			path += string(os.PathListSeparator) + p
		}
		extra = append(extra, childenv.Var{Name: "VIRTUAL_ENV", Value: dir}, childenv.Var{Name: "PATH", Value: path})
	}
	env, err := j.env(childenv.Bench, extra...)
	return proc.Spec{Argv: argv, Env: env}, err
}

// aiperfTools provisions the native aiperf venv; docker hosts run the
// image's aiperf and --tools path takes PATH's.
func (j *Job) aiperfTools() tools.Request {
	return tools.Request{Mode: j.cfg.Tools, Dir: j.aiperfToolsDir(), Set: aiperfSet(), Environ: j.environ, Log: j.log, Now: j.now}
}

func (j *Job) needsAIPerfTools() bool {
	return j.res.Recipe.AIPerf != nil && j.cfg.Tools != tools.ModePath &&
		!(j.res.Profile.Runtime == agents.Docker && j.cfg.BaseURL == "")
}

// aiperf is the aiperf phase: every config in order, on the server the
// bench used; a config's results are one summary entry per sweep point.
func (j *Job) aiperf(ctx context.Context) error {
	if j.needsAIPerfTools() {
		if _, err := tools.Provision(ctx, j.procs, j.aiperfTools()); err != nil {
			return fmt.Errorf("install aiperf: %w", err)
		}
	}
	if j.aiperfInContainer() {
		if err := j.containerAIPerf(ctx); err != nil {
			return err
		}
	}
	return whileServing(ctx, j, j.res.Recipe.AIPerf.Configs,
		func(c workloads.AIPerfConfig) string { return workloads.AIPerfSubject(c.Name, "") },
		func(c workloads.AIPerfConfig) error {
			runs, err := j.aiperfRun(ctx, c)
			j.sum.Bench = append(j.sum.Bench, runs...)
			return err
		},
		func(c workloads.AIPerfConfig, why string) {
			j.sum.Bench = append(j.sum.Bench, summary.BenchRun{Name: workloads.AIPerfSubject(c.Name, ""), Config: workloads.AIPerfSubject(c.Name, ""), Backend: "aiperf", Status: summary.StatusNotRun, Error: why})
		})
}

func (j *Job) aiperfRun(ctx context.Context, c workloads.AIPerfConfig) ([]summary.BenchRun, error) {
	subject := workloads.AIPerfSubject(c.Name, "")
	fail := func(err error) ([]summary.BenchRun, error) {
		return []summary.BenchRun{{Name: subject, Config: subject, Backend: "aiperf", Status: summary.StatusFailed, Error: err.Error()}}, err
	}
	dir := j.aiperfDir(c)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(fmt.Errorf("create %s: %w", dir, err))
	}
	logf, err := os.Create(filepath.Join(j.dir, "aiperf-"+c.Name+".log"))
	if err != nil {
		return fail(fmt.Errorf("create aiperf log: %w", err))
	}
	defer logf.Close()
	spec, err := j.aiperfSpec(c)
	if err != nil {
		return fail(err)
	}
	out := io.MultiWriter(j.log, logf)
	spec.Stdout, spec.Stderr = out, out
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(spec.Argv))
	if err := j.procs.Run(ctx, spec); err != nil {
		return fail(err)
	}
	planned, err := c.Points()
	if err != nil {
		return fail(err)
	}
	points, err := aiperfExports(dir, planned)
	if err != nil {
		return fail(err)
	}
	var runs []summary.BenchRun
	var errs []error
	for _, p := range points {
		name := workloads.AIPerfSubject(c.Name, p.point)
		br := summary.BenchRun{Name: name, Config: subject, Backend: "aiperf", Concurrency: pointConcurrency(p.point), Repetitions: 1, Status: summary.StatusOK}
		br.File, _ = filepath.Rel(j.absDir, p.file)
		var r results.AIPerfResult
		if p.problem == "" {
			r, err = results.ParseAIPerfFile(p.file)
		} else {
			err = errors.New(p.problem)
		}
		switch {
		case err != nil:
		case r.Cancelled:
			err = fmt.Errorf("%s: aiperf says the run was cancelled", br.File)
		case r.Metrics["error_request_count"] > 0:
			// Failed requests change the load the others saw.
			err = fmt.Errorf("%s: %g request(s) failed", br.File, r.Metrics["error_request_count"])
		}
		if err != nil {
			br.Status, br.Error = summary.StatusFailed, err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			runs = append(runs, br)
			continue
		}
		m := r.Metrics
		br.Metrics = m
		br.RequestThroughput, br.OutputThroughput = m["request_throughput"], m["output_token_throughput"]
		if n := j.res.Recipe.NumGPUs; n > 0 {
			br.OutputThroughputPerGPU = br.OutputThroughput / float64(n)
		}
		br.NumPrompts = int(m["request_count"])
		br.TTFT = summary.Latency{Mean: m["time_to_first_token_avg_ms"], Median: m["time_to_first_token_p50_ms"], P99: m["time_to_first_token_p99_ms"]}
		br.ITL = summary.Latency{Mean: m["inter_token_latency_avg_ms"], Median: m["inter_token_latency_p50_ms"], P99: m["inter_token_latency_p99_ms"]}
		br.E2EL = summary.Latency{Mean: m["request_latency_avg_ms"], Median: m["request_latency_p50_ms"], P99: m["request_latency_p99_ms"]}
		fmt.Fprintf(j.log, "runner: %s: %s output tok/s, %s req/s, median TTFT %s ms\n", name,
			numfmt.Num(br.OutputThroughput, numfmt.TokensPerSec), numfmt.Num(br.RequestThroughput, numfmt.Plain), numfmt.Num(br.TTFT.Median, numfmt.Millis))
		runs = append(runs, br)
	}
	return runs, errors.Join(errs...)
}

// aiperfPoint is one run's export, or problem when the run cannot be
// judged from it.
type aiperfPoint struct{ point, file, problem string }

// aiperfExports finds aiperf's exports: one in dir for a single run, one
// per point folder for a sweep (aiperf orchestrator's artifact layout:
// <dir>/<point>/ with one trial). Every planned point comes back, one
// that wrote no export with the problem, so that it is not judged but
// fails the run; so does a point folder the recipe did not plan.
// Aggregates across points are not runs.
func aiperfExports(dir string, planned []workloads.AIPerfPoint) ([]aiperfPoint, error) {
	if len(planned) == 1 && planned[0].Name == "" {
		f := filepath.Join(dir, results.AIPerfExportFile)
		if !fileExists(f) {
			return nil, fmt.Errorf("aiperf wrote no %s in %s", results.AIPerfExportFile, dir)
		}
		return []aiperfPoint{{file: f}}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read aiperf artifacts: %w", err)
	}
	var out []aiperfPoint
	want := map[string]bool{}
	for _, p := range planned {
		want[p.Name] = true
		f := filepath.Join(dir, p.Name, results.AIPerfExportFile)
		ap := aiperfPoint{point: p.Name, file: f}
		if !fileExists(f) {
			ap.problem = fmt.Sprintf("aiperf wrote no %s for the planned sweep point %s", filepath.Join(filepath.Base(dir), p.Name, results.AIPerfExportFile), p.Name)
		}
		out = append(out, ap)
	}
	var extra []aiperfPoint
	for _, e := range entries {
		f := filepath.Join(dir, e.Name(), results.AIPerfExportFile)
		if e.IsDir() && e.Name() != "sweep_aggregate" && !want[e.Name()] && fileExists(f) {
			extra = append(extra, aiperfPoint{point: e.Name(), file: f, problem: fmt.Sprintf("aiperf wrote sweep point %s, which the recipe does not plan (planned: %s)", e.Name(), pointNames(planned))})
		}
	}
	sort.Slice(extra, func(a, b int) bool { return extra[a].point < extra[b].point })
	return append(out, extra...), nil
}

func pointNames(ps []workloads.AIPerfPoint) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// pointConcurrency reads concurrency_<n> out of a sweep point's folder
// name (aiperf joins a point's values as key_value with "__"), 0 when
// absent.
func pointConcurrency(point string) int {
	for _, part := range strings.Split(point, "__") {
		if v, ok := strings.CutPrefix(part, "concurrency_"); ok {
			if n, err := strconv.Atoi(v); err == nil {
				return n
			}
		}
	}
	return 0
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// planAIPerf adds the aiperf install and runs to a plan.
func (j *Job) planAIPerf(add func(proc.Spec, error) error) error {
	if j.res.Recipe.AIPerf == nil {
		return nil
	}
	if j.needsAIPerfTools() {
		specs, err := tools.Plan(j.aiperfTools())
		if err != nil {
			return fmt.Errorf("plan aiperf: %w", err)
		}
		for _, s := range specs {
			if err := add(s, nil); err != nil {
				return err
			}
		}
	}
	for _, c := range j.res.Recipe.AIPerf.Configs {
		if err := add(j.aiperfSpec(c)); err != nil {
			return err
		}
	}
	return nil
}
