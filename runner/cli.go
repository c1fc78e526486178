package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/workloads"
)

type streams struct {
	Stdout io.Writer
	Stderr io.Writer
}

const usage = `runner: run one benchkite recipe inside its GPU job

Usage:
  runner run RECIPE [flags]     serve, bench, evaluate, gate and publish
  runner plan RECIPE [flags]    print every process run would start; start none
  runner report [flags]         build-wide summary of every recipe's results

Run "runner COMMAND -h" for flags. Every flag also reads an environment
variable, named in its help.
`

// errUsage marks a command line that does not parse; exit 2.
var errUsage = errors.New("usage")

// exitCode carries a chosen exit status to main.
type exitCode int

func (e exitCode) Error() string { return "exit " + strconv.Itoa(int(e)) }

func run(ctx context.Context, args []string, io streams, getenv func(string) string, environ []string) int {
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
		err = runReport(ctx, args, io, getenv, environ)
	case "help", "-h", "--help":
		fmt.Fprint(io.Stdout, usage)
		return 0
	default:
		fmt.Fprintf(io.Stderr, "runner: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	var code exitCode
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.Is(err, errUsage):
		fmt.Fprintf(io.Stderr, "runner %s: %v\n", cmd, err)
		return 2
	}
	fmt.Fprintf(io.Stderr, "runner %s: %v\n", cmd, err)
	return 1
}

// config is what `run` and `plan` need besides the recipe.
type config struct {
	recipePath    string
	resultsDir    string
	port          int
	healthTimeout time.Duration
	baseURL       string
	benchOnly     bool
	grace         time.Duration
	agentsFile    string
	gates         gateConfig
	ingestURL     string
	ingestSecret  string
}

// envDuration reads a flag's default from the environment. A value that
// does not parse is added to errs, not replaced by def: a typo such as
// BENCHKITE_HEALTH_TIMEOUT=7200 must not pass unnoticed. So do envInt and
// envBool.
func envDuration(getenv func(string) string, name string, def time.Duration, errs *[]error) time.Duration {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("env %s: %w", name, err))
		return def
	}
	return d
}

func envInt(getenv func(string) string, name string, def int, errs *[]error) int {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("env %s: %q is not a whole number", name, v))
		return def
	}
	return n
}

func envBool(getenv func(string) string, name string, errs *[]error) bool {
	switch v := strings.ToLower(strings.TrimSpace(getenv(name))); v {
	case "1", "true", "yes", "on":
		return true
	case "", "0", "false", "no", "off":
		return false
	default:
		*errs = append(*errs, fmt.Errorf("env %s: %q is not a boolean (1, true, yes, on or 0, false, no, off)", name, v))
		return false
	}
}

// parseFlags is fs.Parse with a bad flag made a usage error (exit 2); the
// flag package has already said what is wrong.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return exitCode(2)
}

// parseConfig reads flags (each with an env fallback) and the recipe path.
func parseConfig(name string, args []string, stderr io.Writer, getenv func(string) string) (config, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var envErrs []error
	fs.StringVar(&c.resultsDir, "results", getenv("BENCHKITE_RESULTS"), "results directory (env BENCHKITE_RESULTS; default results/<recipe name>)")
	fs.IntVar(&c.port, "port", envInt(getenv, "BENCHKITE_PORT", 8000, &envErrs), "server port (env BENCHKITE_PORT)")
	fs.DurationVar(&c.healthTimeout, "health-timeout", envDuration(getenv, "BENCHKITE_HEALTH_TIMEOUT", 60*time.Minute, &envErrs), "how long the server may take to become healthy; big checkpoints download first (env BENCHKITE_HEALTH_TIMEOUT)")
	fs.StringVar(&c.baseURL, "base-url", getenv("BENCHKITE_BASE_URL"), "use a server that is already up instead of starting one (env BENCHKITE_BASE_URL)")
	fs.BoolVar(&c.benchOnly, "bench-only", envBool(getenv, "BENCH_ONLY", &envErrs), "skip accuracy tasks (env BENCH_ONLY)")
	fs.DurationVar(&c.grace, "grace", envDuration(getenv, "BENCHKITE_GRACE", proc.DefaultGrace, &envErrs), "time between SIGTERM and SIGKILL when stopping a process (env BENCHKITE_GRACE)")
	fs.StringVar(&c.agentsFile, "agents", getenv("BENCHKITE_AGENTS"), "GPU profile file (env BENCHKITE_AGENTS; default: built-in profiles)")
	c.gates.register(fs, getenv)
	fs.StringVar(&c.ingestURL, "ingest-url", getenv("BENCHKITE_INGEST_URL"), "also post bench results to this dashboard endpoint, best effort (env BENCHKITE_INGEST_URL)")
	fs.StringVar(&c.ingestSecret, "ingest-token-secret", orDefault(getenv("BENCHKITE_INGEST_TOKEN_SECRET"), "BENCHKITE_INGEST_TOKEN"), "Buildkite secret with the ingest bearer token, when env BENCHKITE_INGEST_TOKEN is unset (env BENCHKITE_INGEST_TOKEN_SECRET)")
	// Flags may follow the recipe: `runner run RECIPE --port 9000`.
	var positional []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return c, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != 1 {
		return c, fmt.Errorf("%w: %s takes one recipe path, got %d", errUsage, name, len(positional))
	}
	c.recipePath = positional[0]
	if len(envErrs) > 0 {
		return c, fmt.Errorf("%w: %w", errUsage, errors.Join(envErrs...))
	}
	if c.port < 1 || c.port > 65535 {
		return c, fmt.Errorf("%w: --port %d is not a port", errUsage, c.port)
	}
	if c.healthTimeout <= 0 || c.grace < 0 {
		return c, fmt.Errorf("%w: --health-timeout must be positive and --grace not negative", errUsage)
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
