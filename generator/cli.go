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

const usage = `generator: Buildkite pipelines for benchkite recipes

Usage:
  generator [pipeline] [flags]   print the pipeline JSON for this build
  generator lint [flags]         validate every recipe; exit 1 on problems
  generator explain [flags] NAME|PATH
                                 show how a recipe resolves (--json for machines)
  generator trigger [flags]      start a build through the Buildkite API

Common flags (each also read from the environment):
  --workloads DIR   recipe directory (BENCHKITE_WORKLOADS; default:
                    ./workloads of the checkout it runs in)
  --agents FILE     GPU profile file (BENCHKITE_AGENTS; default:
                    ./agents/profiles.yaml of the checkout it runs in)

Run "generator COMMAND -h" for a command's own flags.
`

// commonFlags are the flags every subcommand takes.
type commonFlags struct {
	workloadsDir string
	agentsFile   string
}

func (c *commonFlags) register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&c.workloadsDir, "workloads", getenv("BENCHKITE_WORKLOADS"), "recipe directory (env BENCHKITE_WORKLOADS; default: ./"+workloads.DefaultDir+")")
	fs.StringVar(&c.agentsFile, "agents", getenv("BENCHKITE_AGENTS"), "GPU profile file (env BENCHKITE_AGENTS; default: ./"+agents.DefaultPath+")")
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
// the directory), relative or absolute, so that file
// names in messages are the ones the user typed.
type osFS struct{}

func (osFS) Open(name string) (fs.File, error)          { return os.Open(name) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

// ReadLink and Lstat let the loader see symbolic links (fs.ReadLinkFS).
func (osFS) ReadLink(name string) (string, error)   { return os.Readlink(name) }
func (osFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// run is main without the process: tests call it.
func run(ctx context.Context, args []string, io cliutil.Streams, getenv func(string) string) int {
	cmd := "pipeline"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "pipeline":
		err = runPipeline(ctx, args, io, getenv)
	case "lint":
		err = runLint(args, io, getenv)
	case "explain":
		err = runExplain(args, io, getenv)
	case "trigger":
		err = runTrigger(ctx, args, io, getenv)
	case "help":
		fmt.Fprint(io.Stdout, usage)
		return 0
	default:
		fmt.Fprintf(io.Stderr, "generator: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	return cliutil.ExitCode(err, "generator "+cmd, io.Stderr)
}
