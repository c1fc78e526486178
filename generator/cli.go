package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/workloads"
)

// commands are the subcommands, in the order help lists them. Each has
// one shape: its flags (every one also read from an environment
// variable) fill a config struct here, and a plain function takes it.
var commands = []command{
	{name: "pipeline", summary: "print the pipeline JSON for this build (the default command)", flags: pipelineFlags},
	{name: "lint", summary: "validate every recipe; problems as path:line:col, exit 1 on any", flags: lintFlags},
	{name: "explain", operands: "NAME|PATH", summary: "show how one recipe resolves: device, queue, image, argv, tasks (--json for machines)", flags: explainFlags},
	{name: "trigger", summary: "start a build through the Buildkite API after validating the recipes", flags: triggerFlags},
}

// command is one subcommand: flags registers its flags on fs, reading
// each default from env, and returns the action that runs with the parsed
// values.
type command struct {
	name, operands, summary string
	flags                   func(fs *flag.FlagSet, env *cliutil.Env) action
}

// action runs a parsed command with its operands.
type action func(ctx context.Context, operands []string, io cliutil.Streams, getenv func(string) string) error

// usage is `generator help`: every subcommand with one line.
func usage() string {
	var b strings.Builder
	b.WriteString("generator: Buildkite pipelines for benchkite recipes\n\nUsage:\n  generator [COMMAND] [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-18s %s\n", strings.TrimSpace(c.name+" "+c.operands), c.summary)
	}
	b.WriteString("\nRun \"generator COMMAND -h\" for its flags. Every flag also reads the\nenvironment variable named in its help; a flag on the command line wins.\nExit codes are listed in the README.\n")
	return b.String()
}

// flagSet is the command's flags, their defaults read through getenv.
func (c command) flagSet(stderr io.Writer, getenv func(string) string) (*flag.FlagSet, *cliutil.Env, action) {
	fs := cliutil.NewCommandFlagSet("generator", c.name, c.operands, c.summary, stderr)
	env := &cliutil.Env{Getenv: getenv}
	return fs, env, c.flags(fs, env)
}

func (c command) run(ctx context.Context, args []string, io cliutil.Streams, getenv func(string) string) error {
	fs, env, act := c.flagSet(io.Stderr, getenv)
	operands, err := cliutil.ParseWithEnv(fs, env, args)
	if err != nil {
		return err
	}
	return act(ctx, operands, io, getenv)
}

// pipelineConfig is what `generator pipeline` reads from flags and env.
type pipelineConfig struct {
	common      commonFlags
	notes, repo string
	// outDir, when set, receives the pipeline as numbered upload files.
	outDir    string
	noResolve bool
	// historyNeeds, when set, is the file the history step's needs are
	// written to, for the bootstrap step to upload as an artifact.
	historyNeeds string
}

func pipelineFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	var c pipelineConfig
	c.common.register(fs, env)
	fs.StringVar(&c.notes, "notes", env.String("BENCHKITE_NOTES", ""), "also write the selection notes (markdown) to this file (env BENCHKITE_NOTES)")
	fs.StringVar(&c.repo, "repo", env.String("BENCHKITE_REPO", "."), "git work tree for pull request diffs (env BENCHKITE_REPO)")
	fs.StringVar(&c.outDir, "out-dir", env.String("BENCHKITE_PIPELINE_DIR", ""), "write the pipeline as upload files DIR/pipeline-001.json, ... of at most 500 jobs each, to upload in order, instead of printing it; needed when a build holds more jobs than one upload accepts (env BENCHKITE_PIPELINE_DIR)")
	fs.StringVar(&c.historyNeeds, "history-needs", env.String("BENCHKITE_HISTORY_NEEDS", ""), "write the nights the history step fetches to this file, a relative path the generating step uploads as an artifact, which the history step downloads; without it they travel in the step's environment, which holds at most "+fmt.Sprint(maxEnvNeeds>>10)+" KiB of them (env BENCHKITE_HISTORY_NEEDS)")
	fs.BoolVar(&c.noResolve, "no-resolve", env.Bool("BENCHKITE_NO_RESOLVE"), "do not resolve images to digests through their registries (offline use; the notes say so) (env BENCHKITE_NO_RESOLVE)")
	return func(ctx context.Context, operands []string, io cliutil.Streams, getenv func(string) string) error {
		if err := cliutil.NoOperands("pipeline", operands); err != nil {
			return err
		}
		return runPipeline(ctx, c, io, getenv)
	}
}

func lintFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	var c commonFlags
	c.register(fs, env)
	return func(_ context.Context, operands []string, io cliutil.Streams, _ func(string) string) error {
		if err := cliutil.NoOperands("lint", operands); err != nil {
			return err
		}
		return runLint(c, io)
	}
}

func explainFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	var c commonFlags
	c.register(fs, env)
	asJSON := fs.Bool("json", env.Bool("BENCHKITE_EXPLAIN_JSON"), "print JSON instead of text (env BENCHKITE_EXPLAIN_JSON)")
	return func(_ context.Context, operands []string, io cliutil.Streams, getenv func(string) string) error {
		if len(operands) != 1 {
			return fmt.Errorf("%w: explain takes one recipe name or path, got %q", cliutil.ErrUsage, operands)
		}
		return runExplain(c, operands[0], *asJSON, io, getenv)
	}
}

func triggerFlags(fs *flag.FlagSet, env *cliutil.Env) action {
	var t triggerConfig
	t.common.register(fs, env)
	fs.StringVar(&t.apiURL, "api-url", env.String("BENCHKITE_API_URL", "https://api.buildkite.com/"), "Buildkite REST API (env BENCHKITE_API_URL)")
	fs.StringVar(&t.org, "org", env.String("BUILDKITE_ORGANIZATION_SLUG", ""), "organization slug (env BUILDKITE_ORGANIZATION_SLUG)")
	fs.StringVar(&t.pipeline, "pipeline", env.String("BUILDKITE_PIPELINE_SLUG", ""), "pipeline slug (env BUILDKITE_PIPELINE_SLUG)")
	fs.StringVar(&t.branch, "branch", env.String("BENCHKITE_BRANCH", ""), "branch to build (env BENCHKITE_BRANCH; default: the pipeline's default branch)")
	fs.StringVar(&t.commit, "commit", env.String("BENCHKITE_COMMIT", "HEAD"), "commit to build (env BENCHKITE_COMMIT)")
	fs.StringVar(&t.message, "message", env.String("BENCHKITE_MESSAGE", ""), "build message (env BENCHKITE_MESSAGE)")
	fs.StringVar(&t.vllmCommit, "vllm-commit", env.String("VLLM_COMMIT", ""), "vLLM commit whose nightly image to test (env VLLM_COMMIT)")
	fs.StringVar(&t.vllmImage, "vllm-image", env.String("VLLM_IMAGE", ""), "vLLM image to test (env VLLM_IMAGE)")
	fs.StringVar(&t.list, "workloads-list", env.String("WORKLOADS", ""), "recipes to run, comma-separated names or paths (env WORKLOADS; default: the nightly set)")
	fs.BoolVar(&t.benchOnly, "bench-only", env.Bool("BENCH_ONLY"), "skip accuracy tasks (env BENCH_ONLY)")
	return func(ctx context.Context, operands []string, io cliutil.Streams, getenv func(string) string) error {
		if err := cliutil.NoOperands("trigger", operands); err != nil {
			return err
		}
		return runTrigger(ctx, t, io, getenv)
	}
}

// commonFlags are the flags every subcommand takes.
type commonFlags struct {
	workloadsDir string
	agentsFile   string
}

func (c *commonFlags) register(fs *flag.FlagSet, env *cliutil.Env) {
	fs.StringVar(&c.workloadsDir, "workloads", env.String("BENCHKITE_WORKLOADS", ""), "recipe directory (env BENCHKITE_WORKLOADS; default: ./"+workloads.DefaultDir+" of the checkout it runs in)")
	fs.StringVar(&c.agentsFile, "agents", env.String("BENCHKITE_AGENTS", ""), "GPU profile file (env BENCHKITE_AGENTS; default: ./"+agents.DefaultPath+" of the checkout it runs in)")
}

// load reads profiles and every recipe. Unless told otherwise it reads
// the checkout it runs in, as the bootstrap step does, never a copy built
// into the binary (which would lint and run last release's recipes), and
// says so on stderr.
func (c *commonFlags) load(stderr io.Writer) (*agents.Set, *workloads.Catalog, error) {
	if c.workloadsDir == "" || c.agentsFile == "" {
		if c.workloadsDir == "" {
			c.workloadsDir = workloads.DefaultDir
		}
		if c.agentsFile == "" {
			c.agentsFile = agents.DefaultPath
		}
		wd, _ := os.Getwd()
		fmt.Fprintf(stderr, "generator: reading recipes from %s and profiles from %s in %s\n", c.workloadsDir, c.agentsFile, wd)
	}
	profiles, err := agents.LoadFile(c.agentsFile)
	if err != nil {
		return nil, nil, err
	}
	fsys, dir := osFS{}, strings.TrimSuffix(c.workloadsDir, "/")
	cat, err := workloads.LoadDir(fsys, dir, profiles)
	if err != nil {
		return nil, nil, err
	}
	if len(cat.Recipes) == 0 && len(cat.Invalid) == 0 {
		// An empty set is almost always a wrong --workloads path; a green
		// lint or an empty nightly would hide it.
		return nil, nil, fmt.Errorf("no recipes (*.yaml) in %s", dir)
	}
	return profiles, cat, nil
}

// osFS opens paths as the OS does (paths in output read as the user gave
// the directory), relative or absolute, so that file names in messages
// are the ones the user typed.
type osFS struct{}

func (osFS) Open(name string) (fs.File, error)          { return os.Open(name) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// ReadLink and Lstat let the loader see symbolic links (fs.ReadLinkFS).
func (osFS) ReadLink(name string) (string, error)   { return os.Readlink(name) }
func (osFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// run is main without the process: tests call it.
func run(ctx context.Context, args []string, io cliutil.Streams, getenv func(string) string) int {
	name, explicit := "pipeline", false
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args, explicit = args[0], args[1:], true
	}
	switch name {
	case "help":
		fmt.Fprint(io.Stdout, usage())
		return 0
	case "pipeline":
		// "generator --help" is the whole tool's help, not pipeline's.
		if !explicit && len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(io.Stdout, usage())
			fmt.Fprintln(io.Stdout)
			fs, _, _ := commands[0].flagSet(io.Stdout, getenv)
			fs.Usage()
			return 0
		}
	}
	for _, c := range commands {
		if c.name == name {
			return cliutil.ExitCode(c.run(ctx, args, io, getenv), "generator "+name, io.Stderr)
		}
	}
	fmt.Fprintf(io.Stderr, "generator: unknown command %q\n\n%s", name, usage())
	return 2
}
