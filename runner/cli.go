package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
	"github.com/benchkite/benchkite/runner/internal/buildlog"
	"github.com/benchkite/benchkite/runner/internal/calibrate"
	"github.com/benchkite/benchkite/runner/internal/cancel"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/history"
	"github.com/benchkite/benchkite/runner/internal/job"
	"github.com/benchkite/benchkite/runner/internal/jobflags"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/report"
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

// buildkite is the command's one door to Buildkite, the agent run by
// procs with the process's environment.
func (x cmdEnv) buildkite(procs proc.Runner) buildkite.Door {
	return buildkite.New(procs, x.getenv, x.environ)
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
	operands, err := cliutil.ParseWithEnv(fs, env, args)
	if err != nil {
		return err
	}
	return act(ctx, operands, x)
}

// flagSet is the command's flags, their defaults read through getenv.
func (c command) flagSet(stderr io.Writer, getenv func(string) string) (*flag.FlagSet, *cliutil.Env, action) {
	fs := cliutil.NewCommandFlagSet("runner", c.name, c.operands, c.summary, stderr)
	env := &cliutil.Env{Getenv: getenv}
	return fs, env, c.flags(fs, env)
}

func historyFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	var c history.Config
	fs.StringVar(&c.Out, "out", env.String("BENCHKITE_HISTORY_OUT", contract.HistoryDir), "directory to write: one file per recipe, and all of them in one for the next build (env BENCHKITE_HISTORY_OUT)")
	fs.DurationVar(&c.Timeout, "timeout", env.Duration("BENCHKITE_HISTORY_TIMEOUT", history.DefaultTimeout), "stop fetching after this long and write what was fetched (env BENCHKITE_HISTORY_TIMEOUT)")
	fs.StringVar(&c.Needs, "needs", env.String(contract.HistoryEnv, ""), "recipes and nights to fetch, \"recipe<TAB>nights\" lines (env "+contract.HistoryEnv+"; the generator sets it)")
	fs.StringVar(&c.NeedsFile, "needs-file", env.String("BENCHKITE_HISTORY_FILE", ""), "read the recipes and nights to fetch from this file instead, as --needs has them (env BENCHKITE_HISTORY_FILE; the generator's --history-needs writes it)")
	fs.StringVar(&c.API.URL, "api-url", env.String("BENCHKITE_API_URL", "https://api.buildkite.com/"), "Buildkite REST API (env BENCHKITE_API_URL)")
	fs.StringVar(&c.API.TokenEnv, "api-token-env", env.String("BENCHKITE_API_TOKEN_ENV", "BUILDKITE_API_TOKEN"), "env var holding the API token (env BENCHKITE_API_TOKEN_ENV)")
	fs.StringVar(&c.API.TokenSecret, "api-token-secret", env.String("BENCHKITE_API_TOKEN_SECRET", "BENCHKITE_API_TOKEN"), "Buildkite secret holding the API token when the env var is unset (env BENCHKITE_API_TOKEN_SECRET)")
	fs.StringVar(&c.API.Branch, "baseline-branch", env.String("BENCHKITE_BASELINE_BRANCH", env.String("BUILDKITE_PIPELINE_DEFAULT_BRANCH", "")), "branch whose scheduled builds are baselines (env BENCHKITE_BASELINE_BRANCH; default the pipeline's default branch)")
	return func(ctx context.Context, operands []string, x cmdEnv) error {
		if err := cliutil.NoOperands("history", operands); err != nil {
			return err
		}
		return history.Run(ctx, c, x.io, x.getenv, x.buildkite(proc.Exec{}))
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
		if err := cliutil.NoOperands("report", operands); err != nil {
			return err
		}
		return report.Run(ctx, c, x.io, x.getenv, x.buildkite(proc.Exec{}))
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
		if err := cliutil.NoOperands("calibrate", operands); err != nil {
			return err
		}
		err := calibrate.Measure(ctx, c, x.io.Stdout, x.io.Stderr)
		if errors.Is(err, calibrate.ErrUsage) {
			return fmt.Errorf("%w: %w", cliutil.ErrUsage, err)
		}
		return err
	}
}

func runFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	finish := jobflags.Register(fs, env)
	return func(ctx context.Context, operands []string, x cmdEnv) error {
		c, err := finish("run", operands)
		if err != nil {
			return err
		}
		jobflags.WarnAttachVariable(c, x.io.Stderr, x.getenv)
		return runRun(ctx, c, x.io, x.getenv, x.environ)
	}
}

func replayFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	finish := jobflags.Register(fs, env)
	return func(ctx context.Context, operands []string, x cmdEnv) error {
		c, err := finish("replay", operands)
		if err != nil {
			return err
		}
		return runReplay(ctx, c, x.io, x.getenv, x.environ)
	}
}

func planFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	finish := jobflags.Register(fs, env)
	return func(_ context.Context, operands []string, x cmdEnv) error {
		c, err := finish("plan", operands)
		if err != nil {
			return err
		}
		jobflags.WarnAttachVariable(c, x.io.Stderr, x.getenv)
		return runPlan(c, x.io, x.getenv, x.environ)
	}
}

// runRun is `runner run`.
func runRun(ctx context.Context, c jobflags.Config, io cliutil.Streams, getenv func(string) string, environ []string) error {
	res, err := jobflags.LoadRecipe(c, io.Stderr, getenv)
	if err != nil {
		return err
	}
	procs := proc.Exec{Grace: c.Job.Grace}
	deps := job.Deps{Procs: procs, Log: io.Stdout, Getenv: getenv, Environ: environ, Agent: buildkite.Agent{Procs: procs},
		KillLeftovers: func(ctx context.Context) []int { return proc.KillDescendants(ctx, time.Second) }}
	j := job.New(c.Job, res, deps)
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
	var sig cancel.SignalError
	if errors.As(context.Cause(ctx), &sig) {
		return cliutil.Exit(128 + cancel.SignalNumber(sig.Sig))
	}
	return cliutil.Exit(130)
}

// runPlan is `runner plan`: every process run would start, in order.
func runPlan(c jobflags.Config, io cliutil.Streams, getenv func(string) string, environ []string) error {
	res, err := jobflags.LoadRecipe(c, io.Stderr, getenv)
	if err != nil {
		return err
	}
	j := job.New(c.Job, res, job.Deps{Log: io.Stdout, Getenv: getenv, Environ: environ})
	cwd, _ := filepath.Abs(".")
	var out strings.Builder
	if err := j.WritePlan(&out, cwd); err != nil {
		return err
	}
	fmt.Fprint(io.Stdout, out.String())
	return nil
}
