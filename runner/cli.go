package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/calibrate"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/history"
	"github.com/benchkite/benchkite/runner/internal/job"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/report"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/benchkite/benchkite/workloads"
)

const usage = `runner: run one benchkite recipe inside its GPU job

Usage:
  runner run RECIPE [flags]     serve, bench, evaluate, gate and publish
  runner plan RECIPE [flags]    print every process run would start; start none
  runner report [flags]         build-wide summary of every recipe's results
  runner calibrate [flags]      false alarms and power of the regression detector on simulated nights
  runner history [flags]        fetch the past nights a build compares with,
                                once, on a CPU step that holds the API token

Run "runner COMMAND -h" for flags. Every flag also reads an environment
variable, named in its help.
`

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
		fmt.Fprint(io.Stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	var err error
	switch cmd {
	case "run":
		err = runRun(ctx, args, io, getenv, environ)
	case "plan":
		err = runPlan(args, io, getenv, environ)
	case "report":
		err = report.Command(ctx, args, io, getenv, environ)
	case "calibrate":
		err = calibrate.Command(ctx, args, getenv, io.Stdout, io.Stderr)
		if errors.Is(err, calibrate.ErrUsage) {
			err = &cliutil.ExitError{Code: 2, Err: err}
		}
	case "history":
		err = history.Command(ctx, args, io, getenv, environ)
	case "help", "-h", "--help":
		fmt.Fprint(io.Stdout, usage)
		return 0
	default:
		fmt.Fprintf(io.Stderr, "runner: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	return cliutil.ExitCode(err, "runner "+cmd, io.Stderr)
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
	env := cliutil.Env{Getenv: getenv}
	var c config
	j := &c.job
	fs.StringVar(&j.ResultsDir, "results", getenv("BENCHKITE_RESULTS"), "results directory (env BENCHKITE_RESULTS; default results/<recipe name>)")
	fs.IntVar(&j.Port, "port", env.Int("BENCHKITE_PORT", 8000), "server port (env BENCHKITE_PORT)")
	fs.DurationVar(&j.HealthTimeout, "health-timeout", env.Duration("BENCHKITE_HEALTH_TIMEOUT", 60*time.Minute), "how long the server may take to become healthy; big checkpoints download first (env BENCHKITE_HEALTH_TIMEOUT)")
	fs.StringVar(&j.BaseURL, "base-url", getenv("BENCHKITE_BASE_URL"), "use a server that is already up instead of starting one (env BENCHKITE_BASE_URL)")
	fs.BoolVar(&j.BenchOnly, "bench-only", env.Bool("BENCH_ONLY"), "skip accuracy tasks (env BENCH_ONLY)")
	fs.DurationVar(&j.Grace, "grace", env.Duration("BENCHKITE_GRACE", proc.DefaultGrace), "time between SIGTERM and SIGKILL when stopping a process (env BENCHKITE_GRACE)")
	toolsMode := fs.String("tools", env.String("BENCHKITE_TOOLS", string(tools.ModeVenv)), "venv: install the pinned lm-eval (and bfcl-eval) into --tools-dir; path: install nothing, use lm_eval, vllm and python3 from PATH (env BENCHKITE_TOOLS)")
	fs.StringVar(&j.ToolsDir, "tools-dir", env.String("BENCHKITE_TOOLS_DIR", defaultToolsDir(getenv)), "venv for the evaluation tools, reused while it holds the pinned versions (env BENCHKITE_TOOLS_DIR)")
	passEnv := fs.String("pass-env", getenv("BENCHKITE_PASS_ENV"), "comma-separated job variables every child gets as they are; secrets are refused (env BENCHKITE_PASS_ENV)")
	fs.StringVar(&c.agentsFile, "agents", getenv("BENCHKITE_AGENTS"), "GPU profile file (env BENCHKITE_AGENTS; default: built-in profiles)")
	fs.StringVar(&j.Baselines, "baselines", getenv("BENCHKITE_BASELINES"), "the build's history file, written by `runner history`; without it baseline gates say no-baseline (env BENCHKITE_BASELINES)")
	fs.StringVar(&j.IngestURL, "ingest-url", getenv("BENCHKITE_INGEST_URL"), "also post bench results to this dashboard endpoint, best effort (env BENCHKITE_INGEST_URL)")
	fs.BoolVar(&j.IngestNightlyOnly, "ingest-nightly-only", env.Bool("BENCHKITE_INGEST_NIGHTLY_ONLY"), "post only scheduled nights that did not fail and served their own model; other runs are sent marked (env BENCHKITE_INGEST_NIGHTLY_ONLY)")
	fs.StringVar(&j.IngestSecret, "ingest-token-secret", env.String("BENCHKITE_INGEST_TOKEN_SECRET", "BENCHKITE_INGEST_TOKEN"), "Buildkite secret with the ingest bearer token, when env BENCHKITE_INGEST_TOKEN is unset (env BENCHKITE_INGEST_TOKEN_SECRET)")
	// Flags may follow the recipe: `runner run RECIPE --port 9000`.
	positional, err := cliutil.Parse(fs, args)
	if err != nil {
		return c, err
	}
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
	if j.HealthTimeout <= 0 || j.Grace < 0 {
		return c, fmt.Errorf("%w: --health-timeout must be positive and --grace not negative", cliutil.ErrUsage)
	}
	return c, nil
}

// loadRecipe reads and resolves the recipe. Problems are printed as
// path:line:col and nothing is started.
func loadRecipe(c config, getenv func(string) string) (*workloads.Resolved, error) {
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

// runRun is `runner run`.
func runRun(ctx context.Context, args []string, io cliutil.Streams, getenv func(string) string, environ []string) error {
	c, err := parseConfig("run", args, io.Stderr, getenv)
	if err != nil {
		return err
	}
	res, err := loadRecipe(c, getenv)
	if err != nil {
		return err
	}
	deps := job.Deps{Procs: proc.Exec{Grace: c.job.Grace}, Log: io.Stdout, Getenv: getenv, Environ: environ,
		KillLeftovers: func(ctx context.Context) []int { return proc.KillDescendants(ctx, time.Second) }}
	j := job.New(c.job, res, deps)
	result := j.Run(ctx)
	return exitError(ctx, result)
}

// exitError is the run's exit status: 0 for a pass, 1 for a failure or
// an error, contract.ExitUnverified for an unverified run, and 128+signal, as shells report it, for a run stopped by a signal (143 for
// Buildkite's SIGTERM).
func exitError(ctx context.Context, r job.Result) error {
	if !r.Failed {
		return nil
	}
	if r.Verdict == summary.VerdictUnverified && ctx.Err() == nil {
		return cliutil.Exit(contract.ExitUnverified)
	}
	var sig signalError
	if errors.As(context.Cause(ctx), &sig) {
		return cliutil.Exit(128 + signalNumber(sig.sig))
	}
	if ctx.Err() != nil {
		return cliutil.Exit(130)
	}
	return cliutil.Exit(1)
}

// runPlan is `runner plan`: every process run would start, in order.
func runPlan(args []string, io cliutil.Streams, getenv func(string) string, environ []string) error {
	c, err := parseConfig("plan", args, io.Stderr, getenv)
	if err != nil {
		return err
	}
	res, err := loadRecipe(c, getenv)
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
