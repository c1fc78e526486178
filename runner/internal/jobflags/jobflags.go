// Package jobflags reads the flags of the commands that run one recipe
// (run, plan, replay), each with its environment variable, into a
// job.Config, and loads the recipe they name with the checkout's GPU
// profiles.
package jobflags

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/ingest"
	"github.com/benchkite/benchkite/runner/internal/job"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/benchkite/benchkite/workloads"
)

// Config is what run, plan and replay read from flags and the
// environment.
type Config struct {
	// Recipe is the operand: the recipe's path (replay: the manifest's).
	Recipe string
	// Agents is the GPU profile file; "" reads the checkout's.
	Agents string
	Job    job.Config
}

// Parse reads flags (each with an env fallback) and the recipe path.
func Parse(name string, args []string, stderr io.Writer, getenv func(string) string) (Config, error) {
	fs := cliutil.NewFlagSet(name, stderr)
	env := &cliutil.Env{Getenv: getenv}
	finish := Register(fs, env)
	positional, err := cliutil.Parse(fs, args)
	if err != nil {
		return Config{}, err
	}
	c, err := finish(name, positional)
	if err == nil {
		WarnAttachVariable(c, stderr, getenv)
	}
	return c, err
}

// WarnAttachVariable says that BENCHKITE_BASE_URL, which older versions
// read, no longer attaches: only --base-url does.
func WarnAttachVariable(c Config, stderr io.Writer, getenv func(string) string) {
	if v := strings.TrimSpace(getenv("BENCHKITE_BASE_URL")); v != "" && c.Job.BaseURL == "" {
		fmt.Fprintf(stderr, "runner: warning: BENCHKITE_BASE_URL=%s is ignored: attaching to a server takes --base-url\n", v)
	}
}

// Register registers the flags of run, plan and replay on fs; finish
// checks them once parsed, with the operands.
func Register(fs *flag.FlagSet, env *cliutil.Env) (finish func(name string, positional []string) (Config, error)) {
	getenv := env.Getenv
	var c Config
	j := &c.Job
	fs.StringVar(&j.ResultsDir, "results", getenv("BENCHKITE_RESULTS"), "results directory (env BENCHKITE_RESULTS; default results/<recipe name>)")
	fs.IntVar(&j.Port, "port", env.Int("BENCHKITE_PORT", job.DefaultPort), "server port (env BENCHKITE_PORT, then VLLM_PORT; default: in a Buildkite job 20000 + cksum(BUILDKITE_JOB_ID) % 40000, a free port if that is held; else 8000, or a free port on the host's network)")
	fs.DurationVar(&j.HealthTimeout, "health-timeout", env.Duration("BENCHKITE_HEALTH_TIMEOUT", 0), "how long the server may take to become healthy; big checkpoints download first (env BENCHKITE_HEALTH_TIMEOUT; default: the recipe's vllm.startup_timeout_s, 3600 s unless set)")
	// Attaching is a flag only, the one flag with no variable: a variable
	// left in a build's or an agent's environment must not turn every job
	// into a green run of a server nobody started.
	fs.StringVar(&j.BaseURL, "base-url", "", "use a server that is already up instead of starting one; inside a Buildkite job such a run is at most unverified (no env variable, on purpose)")
	fs.BoolVar(&j.BenchOnly, "bench-only", env.Bool("BENCH_ONLY"), "skip accuracy tasks (env BENCH_ONLY)")
	fs.DurationVar(&j.Grace, "grace", env.Duration("BENCHKITE_GRACE", proc.DefaultGrace), "time between SIGTERM and SIGKILL when stopping a process (env BENCHKITE_GRACE)")
	toolsMode := fs.String("tools", env.String("BENCHKITE_TOOLS", string(tools.ModeVenv)), "venv: install the pinned lm-eval (and bfcl-eval) into --tools-dir; path: install nothing, use lm_eval, vllm and python3 from PATH (env BENCHKITE_TOOLS)")
	fs.StringVar(&j.ToolsDir, "tools-dir", env.String("BENCHKITE_TOOLS_DIR", defaultToolsDir(getenv)), "venv for the evaluation tools, reused while it holds the pinned versions (env BENCHKITE_TOOLS_DIR)")
	fs.BoolVar(&j.Unconfined, "unconfined", env.Bool("BENCHKITE_UNCONFINED"), "start the processes that run model code (server, bench, lm_eval, BFCL) without user and mount namespaces of their own, where the kernel allows none; they can then read every process of the runner's uid (env BENCHKITE_UNCONFINED)")
	passEnv := fs.String("pass-env", getenv("BENCHKITE_PASS_ENV"), "comma-separated job variables every child gets as they are; secrets are refused (env BENCHKITE_PASS_ENV)")
	fs.StringVar(&c.Agents, "agents", getenv("BENCHKITE_AGENTS"), "GPU profile file (env BENCHKITE_AGENTS; default: ./"+agents.DefaultPath+" of the checkout it runs in)")
	fs.StringVar(&j.Baselines, "baselines", getenv("BENCHKITE_BASELINES"), "the build's history file, written by 'runner history'; without it baseline gates say no-baseline (env BENCHKITE_BASELINES)")
	fs.StringVar(&j.HistoryStep, "history-step", getenv("BENCHKITE_HISTORY_STEP"), "without --baselines: the key of the build's history step, whose files the gates download, waiting for it if it still runs (env BENCHKITE_HISTORY_STEP)")
	fs.DurationVar(&j.HistoryWait, "history-wait", env.Duration("BENCHKITE_HISTORY_WAIT", 30*time.Minute), "how long the gates wait for a running history step (env BENCHKITE_HISTORY_WAIT)")
	fs.StringVar(&j.IngestURL, "ingest-url", getenv("BENCHKITE_INGEST_URL"), "also post bench results to this dashboard endpoint, best effort (env BENCHKITE_INGEST_URL)")
	fs.BoolVar(&j.IngestNightlyOnly, "ingest-nightly-only", env.Bool("BENCHKITE_INGEST_NIGHTLY_ONLY"), "post only scheduled nights that did not fail and served their own model; other runs are sent marked (env BENCHKITE_INGEST_NIGHTLY_ONLY)")
	fs.StringVar(&j.IngestSecret, "ingest-token-secret", env.String("BENCHKITE_INGEST_TOKEN_SECRET", "BENCHKITE_INGEST_TOKEN"), "Buildkite secret with the ingest bearer token, when env BENCHKITE_INGEST_TOKEN is unset (env BENCHKITE_INGEST_TOKEN_SECRET; with --ingest-format perf-eval the default is INGEST_BEARER_TOKEN, also read from the environment)")
	ingestFormat := fs.String("ingest-format", env.String("BENCHKITE_INGEST_FORMAT", ""), "perf-eval: also post in perf-eval's shape to its perf and eval dashboards, one object per POST, samples in batches of at most 4 MiB; set once in the pipeline's env (env BENCHKITE_INGEST_FORMAT)")
	fs.StringVar(&j.IngestPerfURL, "ingest-perf-url", env.String("PERF_INGEST_URL", ingest.PerfEvalPerfURL), "with --ingest-format perf-eval: the perf endpoint (env PERF_INGEST_URL)")
	fs.StringVar(&j.IngestEvalURL, "ingest-eval-url", env.String("INGEST_URL", ingest.PerfEvalEvalURL), "with --ingest-format perf-eval: the eval endpoint (env INGEST_URL)")
	fs.BoolVar(&j.IngestNoSamples, "ingest-no-samples", env.Bool("INGEST_NO_SAMPLES"), "with --ingest-format perf-eval: do not post lm_eval's samples (env INGEST_NO_SAMPLES)")
	return func(name string, positional []string) (Config, error) {
		var err error
		if len(positional) != 1 {
			return c, fmt.Errorf("%w: %s takes one recipe path, got %d", cliutil.ErrUsage, name, len(positional))
		}
		c.Recipe = positional[0]
		if err := env.Err(); err != nil {
			return c, err
		}
		portAsked := flagSet(fs, "port") || strings.TrimSpace(getenv("BENCHKITE_PORT")) != ""
		if v := getenv("VLLM_PORT"); !portAsked && strings.TrimSpace(v) != "" {
			// perf-eval's override of the per-job port; a job that sets
			// it for both systems gets one port.
			if j.Port, err = job.ParsePort("VLLM_PORT", v); err != nil {
				return c, fmt.Errorf("%w: %w", cliutil.ErrUsage, err)
			}
			portAsked = true
		}
		c.Job.PortAuto = !portAsked
		switch f := strings.TrimSpace(*ingestFormat); f {
		case "", "benchkite":
		case "perf-eval":
			j.IngestPerfEval = true
			if !flagSet(fs, "ingest-token-secret") && strings.TrimSpace(getenv("BENCHKITE_INGEST_TOKEN_SECRET")) == "" {
				j.IngestSecret = ingest.PerfEvalTokenName
			}
		default:
			return c, fmt.Errorf("%w: --ingest-format %q: use perf-eval, or leave it unset", cliutil.ErrUsage, f)
		}
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

// LoadRecipe reads and resolves the recipe. Problems are printed as
// path:line:col and nothing is started. Without --agents it reads the
// profiles of the checkout it runs in, never a copy built into the
// binary, and says so on stderr.
func LoadRecipe(c Config, stderr io.Writer, getenv func(string) string) (*workloads.Resolved, error) {
	if c.Agents == "" {
		c.Agents = agents.DefaultPath
		wd, _ := os.Getwd()
		fmt.Fprintf(stderr, "runner: reading profiles from %s in %s\n", c.Agents, wd)
	}
	profiles, err := agents.LoadFile(c.Agents)
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(c.Recipe)
	if err != nil {
		return nil, fmt.Errorf("read recipe: %w", err)
	}
	r, problems := workloads.Parse(c.Recipe, src, profiles)
	if r == nil {
		return nil, fmt.Errorf("recipe is invalid:\n%w", problems.Errors())
	}
	return workloads.Resolve(r, profiles, getenv)
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
