package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/buildlog"
	"github.com/benchkite/benchkite/runner/internal/calibrate"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/history"
	"github.com/benchkite/benchkite/runner/internal/job"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/report"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/benchkite/benchkite/workloads"
)

// commands are the subcommands, in the order help lists them. Each has
// one shape: its flags (every one also read from an environment
// variable) fill a config struct here, and a plain function of its package
// takes that struct.
var commands = []command{
	{name: "run", operands: "RECIPE", summary: "serve, bench, evaluate, gate and publish one recipe (the GPU job)", flags: runFlags},
	{name: "plan", operands: "RECIPE", summary: "print every process run would start, in order; start none", flags: planFlags},
	{name: "replay", operands: "MANIFEST", summary: "run a recorded run again: its recipe copy, its image by digest or rebuilt at its commit", flags: replayFlags},
	{name: "history", summary: "fetch the past nights a build compares with, once, on the CPU step holding the API token", flags: historyFlags},
	{name: "report", summary: "write the build's report annotation and trend page from every recipe's summary", flags: reportFlags},
	{name: "calibrate", summary: "measure the regression detector's false alarms and power on simulated nights", flags: calibrateFlags},
}

// command is one subcommand: flags registers its flags on fs, reading
// each default from env, and returns the action that runs with the parsed
// values.
type command struct {
	name, operands, summary string
	flags                   func(fs *flag.FlagSet, env *cliutil.Env) action
}

// action runs a parsed command with its operands.
type action func(ctx context.Context, operands []string, x cmdEnv) error

// cmdEnv is what every action may use of the process.
type cmdEnv struct {
	io      cliutil.Streams
	getenv  func(string) string
	environ []string
}

// usage is `runner help`: every subcommand with one line.
func usage() string {
	var b strings.Builder
	b.WriteString("runner: run one benchkite recipe inside its GPU job, and the build's CPU steps\n\nUsage:\n  runner COMMAND [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-22s %s\n", strings.TrimSpace(c.name+" "+c.operands), c.summary)
	}
	b.WriteString("\nRun \"runner COMMAND -h\" for its flags. Every flag also reads the\nenvironment variable named in its help; a flag on the command line wins.\nExit codes are listed in the README.\n")
	return b.String()
}

// signalError is the cancel cause of a run stopped by a signal.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "received " + e.sig.String() }

// signalNumber is the signal's number, for the 128+N exit status.
func signalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 1
}

// run is main without the process: tests call it.
func run(ctx context.Context, args []string, io cliutil.Streams, getenv func(string) string, environ []string) int {
	if len(args) == 0 {
		fmt.Fprint(io.Stderr, usage())
		return 2
	}
	name, args := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(io.Stdout, usage())
		return 0
	}
	for _, c := range commands {
		if c.name == name {
			return cliutil.ExitCode(c.run(ctx, args, cmdEnv{io: io, getenv: getenv, environ: environ}), "runner "+name, io.Stderr)
		}
	}
	fmt.Fprintf(io.Stderr, "runner: unknown command %q\n\n%s", name, usage())
	return 2
}

// run parses the command's flags and environment, then runs it.
func (c command) run(ctx context.Context, args []string, x cmdEnv) error {
	fs, env, act := c.flagSet(x.io.Stderr, x.getenv)
	operands, err := cliutil.Parse(fs, args)
	if err != nil {
		return err
	}
	if err := env.Err(); err != nil {
		return err
	}
	return act(ctx, operands, x)
}

// flagSet is the command's flags, their defaults read through getenv.
func (c command) flagSet(stderr io.Writer, getenv func(string) string) (*flag.FlagSet, *cliutil.Env, action) {
	fs := cliutil.NewFlagSet(c.name, stderr)
	env := &cliutil.Env{Getenv: getenv}
	act := c.flags(fs, env)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: runner %s [flags]\n\n%s\n\nFlags:\n", strings.TrimSpace(c.name+" "+c.operands), c.summary)
		fs.PrintDefaults()
	}
	return fs, env, act
}

// noOperands is the usage error of a command that takes none.
func noOperands(name string, operands []string) error {
	if len(operands) > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", cliutil.ErrUsage, name, operands)
	}
	return nil
}

func historyFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	var c history.Config
	fs.StringVar(&c.Out, "out", env.String("BENCHKITE_HISTORY_OUT", contract.HistoryDir), "directory to write: one file per recipe, and all of them in one for the next build (env BENCHKITE_HISTORY_OUT)")
	fs.DurationVar(&c.Timeout, "timeout", env.Duration("BENCHKITE_HISTORY_TIMEOUT", history.DefaultTimeout), "stop fetching after this long and write what was fetched (env BENCHKITE_HISTORY_TIMEOUT)")
	fs.StringVar(&c.Needs, "needs", env.String(contract.HistoryEnv, ""), "recipes and nights to fetch, \"recipe<TAB>nights\" lines (env "+contract.HistoryEnv+"; the generator sets it)")
	fs.StringVar(&c.API.URL, "api-url", env.String("BENCHKITE_API_URL", "https://api.buildkite.com/"), "Buildkite REST API (env BENCHKITE_API_URL)")
	fs.StringVar(&c.API.TokenEnv, "api-token-env", env.String("BENCHKITE_API_TOKEN_ENV", "BUILDKITE_API_TOKEN"), "env var holding the API token (env BENCHKITE_API_TOKEN_ENV)")
	fs.StringVar(&c.API.TokenSecret, "api-token-secret", env.String("BENCHKITE_API_TOKEN_SECRET", "BENCHKITE_API_TOKEN"), "Buildkite secret holding the API token when the env var is unset (env BENCHKITE_API_TOKEN_SECRET)")
	fs.StringVar(&c.API.Branch, "baseline-branch", env.String("BENCHKITE_BASELINE_BRANCH", env.String("BUILDKITE_PIPELINE_DEFAULT_BRANCH", "")), "branch whose scheduled builds are baselines (env BENCHKITE_BASELINE_BRANCH; default the pipeline's default branch)")
	return func(ctx context.Context, operands []string, x cmdEnv) error {
		if err := noOperands("history", operands); err != nil {
			return err
		}
		return history.Run(ctx, c, x.io, x.getenv, x.environ)
	}
}

func reportFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	var c report.Config
	fs.StringVar(&c.Results, "results", env.String("BENCHKITE_RESULTS", contract.ResultsRoot), "directory holding <recipe>/summary.json (env BENCHKITE_RESULTS)")
	inBuildkite := buildlog.InBuildkite(env.Getenv)
	download := inBuildkite
	if strings.TrimSpace(env.Getenv("BENCHKITE_DOWNLOAD")) != "" {
		download = env.Bool("BENCHKITE_DOWNLOAD")
	}
	fs.BoolVar(&c.Download, "download", download, "download this build's summaries with buildkite-agent first (env BENCHKITE_DOWNLOAD; default: when in a Buildkite job)")
	fs.StringVar(&c.API.URL, "api-url", env.String("BENCHKITE_API_URL", "https://api.buildkite.com/"), "Buildkite REST API, for the state of steps that left no summary (env BENCHKITE_API_URL)")
	fs.StringVar(&c.API.TokenEnv, "api-token-env", env.String("BENCHKITE_API_TOKEN_ENV", "BUILDKITE_API_TOKEN"), "env var holding the API token (env BENCHKITE_API_TOKEN_ENV)")
	fs.StringVar(&c.API.TokenSecret, "api-token-secret", env.String("BENCHKITE_API_TOKEN_SECRET", "BENCHKITE_API_TOKEN"), "Buildkite secret holding the API token when the env var is unset (env BENCHKITE_API_TOKEN_SECRET)")
	c.BuildFDR = gate.DefaultBuildFDR
	if v := strings.TrimSpace(env.Getenv("BENCHKITE_BUILD_FDR")); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			env.Fail(fmt.Errorf("env BENCHKITE_BUILD_FDR: %q: %w", v, err))
		}
		c.BuildFDR = f
	}
	fs.Float64Var(&c.BuildFDR, "build-fdr", c.BuildFDR, "the build's false-alarm budget: Benjamini–Hochberg level over its regression tests (env BENCHKITE_BUILD_FDR)")
	return func(ctx context.Context, operands []string, x cmdEnv) error {
		if err := noOperands("report", operands); err != nil {
			return err
		}
		return report.Run(ctx, c, x.io, x.getenv, x.environ)
	}
}

func calibrateFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	c := calibrate.Defaults()
	c.Flags(fs)
	// Each flag reads BENCHKITE_CALIBRATE_<FLAG>: --noise-cv is
	// BENCHKITE_CALIBRATE_NOISE_CV.
	fs.VisitAll(func(f *flag.Flag) {
		name := calibrate.EnvPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		f.Usage += " (env " + name + ")"
		if v := strings.TrimSpace(env.Getenv(name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				env.Fail(fmt.Errorf("env %s: %q: %w", name, v, err))
			}
			f.DefValue = f.Value.String()
		}
	})
	return func(ctx context.Context, operands []string, x cmdEnv) error {
		if err := noOperands("calibrate", operands); err != nil {
			return err
		}
		err := calibrate.Measure(ctx, c, x.io.Stdout, x.io.Stderr)
		if errors.Is(err, calibrate.ErrUsage) {
			return fmt.Errorf("%w: %w", cliutil.ErrUsage, err)
		}
		return err
	}
}

// config is what `run` and `plan` read from flags and the environment.
type config struct {
	recipePath string
	agentsFile string
	job        job.Config
}

// parseConfig reads flags (each with an env fallback) and the recipe path.
func parseConfig(name string, args []string, stderr io.Writer, getenv func(string) string) (config, error) {
	fs := cliutil.NewFlagSet(name, stderr)
	env := &cliutil.Env{Getenv: getenv}
	finish := jobFlags(fs, env)
	positional, err := cliutil.Parse(fs, args)
	if err != nil {
		return config{}, err
	}
	c, err := finish(name, positional)
	if err == nil {
		warnAttachVariable(c, stderr, getenv)
	}
	return c, err
}

// warnAttachVariable says that BENCHKITE_BASE_URL, which older versions
// read, no longer attaches: only --base-url does.
func warnAttachVariable(c config, stderr io.Writer, getenv func(string) string) {
	if v := strings.TrimSpace(getenv("BENCHKITE_BASE_URL")); v != "" && c.job.BaseURL == "" {
		fmt.Fprintf(stderr, "runner: warning: BENCHKITE_BASE_URL=%s is ignored: attaching to a server takes --base-url\n", v)
	}
}

// jobFlags registers the flags of run and plan; finish checks them once
// parsed, with the operands.
func jobFlags(fs *flag.FlagSet, env *cliutil.Env) (finish func(name string, positional []string) (config, error)) {
	getenv := env.Getenv
	var c config
	j := &c.job
	fs.StringVar(&j.ResultsDir, "results", getenv("BENCHKITE_RESULTS"), "results directory (env BENCHKITE_RESULTS; default results/<recipe name>)")
	fs.IntVar(&j.Port, "port", env.Int("BENCHKITE_PORT", 8000), "server port (env BENCHKITE_PORT)")
	fs.DurationVar(&j.HealthTimeout, "health-timeout", env.Duration("BENCHKITE_HEALTH_TIMEOUT", 0), "how long the server may take to become healthy; big checkpoints download first (env BENCHKITE_HEALTH_TIMEOUT; default: the recipe's vllm.startup_timeout_s, 3600 s unless set)")
	// Attaching is a flag only, the one flag with no variable: a variable
	// left in a build's or an agent's environment must not turn every job
	// into a green run of a server nobody started.
	fs.StringVar(&j.BaseURL, "base-url", "", "use a server that is already up instead of starting one; inside a Buildkite job such a run is at most unverified (no env variable, on purpose)")
	fs.BoolVar(&j.BenchOnly, "bench-only", env.Bool("BENCH_ONLY"), "skip accuracy tasks (env BENCH_ONLY)")
	fs.DurationVar(&j.Grace, "grace", env.Duration("BENCHKITE_GRACE", proc.DefaultGrace), "time between SIGTERM and SIGKILL when stopping a process (env BENCHKITE_GRACE)")
	toolsMode := fs.String("tools", env.String("BENCHKITE_TOOLS", string(tools.ModeVenv)), "venv: install the pinned lm-eval (and bfcl-eval) into --tools-dir; path: install nothing, use lm_eval, vllm and python3 from PATH (env BENCHKITE_TOOLS)")
	fs.StringVar(&j.ToolsDir, "tools-dir", env.String("BENCHKITE_TOOLS_DIR", defaultToolsDir(getenv)), "venv for the evaluation tools, reused while it holds the pinned versions (env BENCHKITE_TOOLS_DIR)")
	passEnv := fs.String("pass-env", getenv("BENCHKITE_PASS_ENV"), "comma-separated job variables every child gets as they are; secrets are refused (env BENCHKITE_PASS_ENV)")
	fs.StringVar(&c.agentsFile, "agents", getenv("BENCHKITE_AGENTS"), "GPU profile file (env BENCHKITE_AGENTS; default: ./"+agents.DefaultPath+" of the checkout it runs in)")
	fs.StringVar(&j.Baselines, "baselines", getenv("BENCHKITE_BASELINES"), "the build's history file, written by 'runner history'; without it baseline gates say no-baseline (env BENCHKITE_BASELINES)")
	fs.StringVar(&j.HistoryStep, "history-step", getenv("BENCHKITE_HISTORY_STEP"), "without --baselines: the key of the build's history step, whose files the gates download, waiting for it if it still runs (env BENCHKITE_HISTORY_STEP)")
	fs.DurationVar(&j.HistoryWait, "history-wait", env.Duration("BENCHKITE_HISTORY_WAIT", 30*time.Minute), "how long the gates wait for a running history step (env BENCHKITE_HISTORY_WAIT)")
	fs.StringVar(&j.IngestURL, "ingest-url", getenv("BENCHKITE_INGEST_URL"), "also post bench results to this dashboard endpoint, best effort (env BENCHKITE_INGEST_URL)")
	fs.BoolVar(&j.IngestNightlyOnly, "ingest-nightly-only", env.Bool("BENCHKITE_INGEST_NIGHTLY_ONLY"), "post only scheduled nights that did not fail and served their own model; other runs are sent marked (env BENCHKITE_INGEST_NIGHTLY_ONLY)")
	fs.StringVar(&j.IngestSecret, "ingest-token-secret", env.String("BENCHKITE_INGEST_TOKEN_SECRET", "BENCHKITE_INGEST_TOKEN"), "Buildkite secret with the ingest bearer token, when env BENCHKITE_INGEST_TOKEN is unset (env BENCHKITE_INGEST_TOKEN_SECRET)")
	return func(name string, positional []string) (config, error) {
		var err error
		if len(positional) != 1 {
			return c, fmt.Errorf("%w: %s takes one recipe path, got %d", cliutil.ErrUsage, name, len(positional))
		}
		c.recipePath = positional[0]
		if err := env.Err(); err != nil {
			return c, err
		}
		c.job.PortAuto = !flagSet(fs, "port") && strings.TrimSpace(getenv("BENCHKITE_PORT")) == ""
		if j.Tools, err = tools.ParseMode(*toolsMode); err != nil {
			return c, fmt.Errorf("%w: --tools: %w", cliutil.ErrUsage, err)
		}
		for _, name := range strings.Split(*passEnv, ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			if err := childenv.CheckPass(name); err != nil {
				return c, fmt.Errorf("%w: --pass-env: %w", cliutil.ErrUsage, err)
			}
			j.PassEnv = append(j.PassEnv, name)
		}
		if j.Port < 1 || j.Port > 65535 {
			return c, fmt.Errorf("%w: --port %d is not a port", cliutil.ErrUsage, j.Port)
		}
		if j.HealthTimeout < 0 || (j.HealthTimeout == 0 && (flagSet(fs, "health-timeout") || strings.TrimSpace(getenv("BENCHKITE_HEALTH_TIMEOUT")) != "")) || j.Grace < 0 {
			return c, fmt.Errorf("%w: --health-timeout must be positive and --grace not negative", cliutil.ErrUsage)
		}
		return c, nil
	}
}

// loadRecipe reads and resolves the recipe. Problems are printed as
// path:line:col and nothing is started. Without --agents it reads the
// profiles of the checkout it runs in, never a copy built into the
// binary, and says so on stderr.
func loadRecipe(c config, stderr io.Writer, getenv func(string) string) (*workloads.Resolved, error) {
	if c.agentsFile == "" {
		c.agentsFile = agents.DefaultPath
		wd, _ := os.Getwd()
		fmt.Fprintf(stderr, "runner: reading profiles from %s in %s\n", c.agentsFile, wd)
	}
	profiles, err := agents.LoadFile(c.agentsFile)
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(c.recipePath)
	if err != nil {
		return nil, fmt.Errorf("read recipe: %w", err)
	}
	r, problems := workloads.Parse(c.recipePath, src, profiles)
	if r == nil {
		return nil, fmt.Errorf("recipe is invalid:\n%w", problems.Errors())
	}
	return workloads.Resolve(r, profiles, getenv)
}

func runFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	finish := jobFlags(fs, env)
	return func(ctx context.Context, operands []string, x cmdEnv) error {
		c, err := finish("run", operands)
		if err != nil {
			return err
		}
		warnAttachVariable(c, x.io.Stderr, x.getenv)
		return runRun(ctx, c, x.io, x.getenv, x.environ)
	}
}

func replayFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	finish := jobFlags(fs, env)
	return func(ctx context.Context, operands []string, x cmdEnv) error {
		c, err := finish("replay", operands)
		if err != nil {
			return err
		}
		return runReplay(ctx, c, x.io, x.getenv, x.environ)
	}
}

func planFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	finish := jobFlags(fs, env)
	return func(_ context.Context, operands []string, x cmdEnv) error {
		c, err := finish("plan", operands)
		if err != nil {
			return err
		}
		warnAttachVariable(c, x.io.Stderr, x.getenv)
		return runPlan(c, x.io, x.getenv, x.environ)
	}
}

// runRun is `runner run`.
func runRun(ctx context.Context, c config, io cliutil.Streams, getenv func(string) string, environ []string) error {
	res, err := loadRecipe(c, io.Stderr, getenv)
	if err != nil {
		return err
	}
	deps := job.Deps{Procs: proc.Exec{Grace: c.job.Grace}, Log: io.Stdout, Getenv: getenv, Environ: environ,
		KillLeftovers: func(ctx context.Context) []int { return proc.KillDescendants(ctx, time.Second) }}
	j := job.New(c.job, res, deps)
	result := j.Run(ctx)
	return exitError(ctx, result)
}

// exitError is the run's exit status: the verdict's (gate.Judgement.Exit),
// or 128+signal, as shells report it, for a run stopped by a signal (143
// for Buildkite's SIGTERM).
func exitError(ctx context.Context, r job.Result) error {
	if !r.Failed {
		return nil
	}
	if ctx.Err() == nil {
		if r.Exit == 0 {
			return cliutil.Exit(1) // failed, yet no status: never a pass
		}
		return cliutil.Exit(r.Exit)
	}
	var sig signalError
	if errors.As(context.Cause(ctx), &sig) {
		return cliutil.Exit(128 + signalNumber(sig.sig))
	}
	return cliutil.Exit(130)
}

// runPlan is `runner plan`: every process run would start, in order.
func runPlan(c config, io cliutil.Streams, getenv func(string) string, environ []string) error {
	res, err := loadRecipe(c, io.Stderr, getenv)
	if err != nil {
		return err
	}
	j := job.New(c.job, res, job.Deps{Log: io.Stdout, Getenv: getenv, Environ: environ})
	cwd, _ := filepath.Abs(".")
	var out strings.Builder
	if err := j.WritePlan(&out, cwd); err != nil {
		return err
	}
	fmt.Fprint(io.Stdout, out.String())
	return nil
}

// flagSet says whether the command line set the flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// defaultToolsDir keeps the venv out of the checkout, which Buildkite may
// clean between jobs, when there is a home to keep it in.
func defaultToolsDir(getenv func(string) string) string {
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".cache", "benchkite", "tools")
	}
	return filepath.Join(".benchkite", "tools")
}
