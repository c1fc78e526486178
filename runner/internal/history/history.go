// Package history is `runner history`: the build's one fetch of past
// nights, on a CPU step.
//
// Every recipe of a build compares with past nights, its own and those of
// the recipes its baseline_from names. Fetching them from each GPU job
// would put an org API token into pods that run a model repository's code
// and multiply the API calls by the recipes. So one CPU step, which holds
// the token, fetches them all once and writes them as one artifact
// (baseline.File) that the GPU jobs download and read with
// baseline.FileSource.
package history

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// Command is `runner history`: it fetches the nights named in
// BENCHKITE_HISTORY (or --needs) through the Buildkite API and writes
// them to --out. The file is written even when fetches fail, with the
// reasons, so the gates say why they have no baseline; the command then
// fails when the API could not be used at all.
func Command(ctx context.Context, args []string, io cliutil.Streams, getenv func(string) string, environ []string) error {
	return run(ctx, args, io, getenv, environ, nil)
}

// run is Command with the source replaceable in tests.
func run(ctx context.Context, args []string, streams cliutil.Streams, getenv func(string) string, environ []string, source func(ctx context.Context) (baseline.Source, error)) error {
	fs := cliutil.NewFlagSet("history", streams.Stderr)
	env := cliutil.Env{Getenv: getenv}
	out := fs.String("out", env.String("BENCHKITE_HISTORY_OUT", contract.HistoryArtifact), "file to write (env BENCHKITE_HISTORY_OUT)")
	needsText := fs.String("needs", getenv(contract.HistoryEnv), "recipes and nights to fetch, \"recipe<TAB>nights\" lines (env "+contract.HistoryEnv+"; the generator sets it)")
	var c baseline.APIConfig
	fs.StringVar(&c.URL, "api-url", env.String("BENCHKITE_API_URL", "https://api.buildkite.com/"), "Buildkite REST API (env BENCHKITE_API_URL)")
	fs.StringVar(&c.TokenEnv, "api-token-env", env.String("BENCHKITE_API_TOKEN_ENV", "BUILDKITE_API_TOKEN"), "env var holding the API token (env BENCHKITE_API_TOKEN_ENV)")
	fs.StringVar(&c.TokenSecret, "api-token-secret", env.String("BENCHKITE_API_TOKEN_SECRET", "BENCHKITE_API_TOKEN"), "Buildkite secret holding the API token when the env var is unset (env BENCHKITE_API_TOKEN_SECRET)")
	fs.StringVar(&c.Branch, "baseline-branch", env.String("BENCHKITE_BASELINE_BRANCH", getenv("BUILDKITE_PIPELINE_DEFAULT_BRANCH")), "branch whose scheduled builds are baselines (env BENCHKITE_BASELINE_BRANCH; default the pipeline's default branch)")
	operands, err := cliutil.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return fmt.Errorf("%w: history takes no arguments, got %q", cliutil.ErrUsage, operands)
	}
	if err := env.Err(); err != nil {
		return err
	}
	needs, err := contract.ParseNeeds(*needsText)
	if err != nil {
		return fmt.Errorf("%w: %w", cliutil.ErrUsage, err)
	}
	if source == nil {
		source = baseline.APISource(c, getenv, secretGetter(environ))
	}
	f := &baseline.File{Version: baseline.FileVersion, FetchedAt: time.Now().UTC(), Recipes: map[string]baseline.FileRecipe{}}
	f.BuildNumber, _ = strconv.Atoi(getenv("BUILDKITE_BUILD_NUMBER"))
	var failure error
	if len(needs) > 0 {
		src, err := source(ctx)
		if err != nil {
			failure = fmt.Errorf("no baselines for this build: %w", err)
		}
		for _, n := range needs {
			key := contract.StepKey(n.Recipe)
			if failure != nil {
				f.Record(n.Recipe, key, n.Nights, baseline.Result{}, failure)
				continue
			}
			r, err := src.Last(ctx, n.Recipe, key, n.Nights)
			if len(n.Samples) > 0 {
				outcomes(ctx, streams.Stdout, src, n, &r)
			}
			f.Record(n.Recipe, key, n.Nights, r, err)
			report(streams.Stdout, n, r, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return fmt.Errorf("create history directory: %w", err)
	}
	if err := f.WriteFile(*out); err != nil {
		return err
	}
	fmt.Fprintf(streams.Stdout, "runner: wrote the nights of %d recipe(s) to %s\n", len(needs), *out)
	if failure != nil {
		fmt.Fprintf(streams.Stdout, "+++ :warning: %v\n", failure)
		return failure
	}
	return nil
}

// outcomes adds to the nights a baseline_from gate may pick the
// per-question outcomes of the need's tasks. A night without them is
// recorded as missing them, with the reason; it fails nothing else.
func outcomes(ctx context.Context, w io.Writer, src baseline.Source, n contract.Need, r *baseline.Result) {
	fetch, ok := src.(baseline.OutcomeSource)
	if !ok {
		return
	}
	for _, i := range baseline.OutcomeNights(r.Nights) {
		night := &r.Nights[i]
		for _, task := range n.Samples {
			o, err := fetch.Outcomes(ctx, *night, n.Recipe, task)
			if err != nil {
				o.Task, o.BuildNumber, o.Missing = task, night.BuildNumber, fmt.Sprintf("could not fetch the samples: %v", err)
			}
			night.Outcomes = append(night.Outcomes, o)
			if o.Missing != "" {
				fmt.Fprintf(w, "%s #%d %s: no per-question outcomes (%s)\n", n.Recipe, night.BuildNumber, task, o.Missing)
			} else {
				fmt.Fprintf(w, "%s #%d %s: per-question outcomes of %d documents from %s\n", n.Recipe, night.BuildNumber, task, len(o.DocHashes), o.Artifact)
			}
		}
	}
}

func report(w io.Writer, n contract.Need, r baseline.Result, err error) {
	var builds []string
	for _, night := range r.Nights {
		builds = append(builds, fmt.Sprintf("#%d", night.BuildNumber))
	}
	fmt.Fprintf(w, "%s: %d of %d night(s) %s", n.Recipe, len(r.Nights), n.Nights, strings.Join(builds, " "))
	if len(r.Missed) > 0 {
		fmt.Fprintf(w, ", %d missed", len(r.Missed))
	}
	if err != nil {
		fmt.Fprintf(w, " (%v)", err)
	}
	fmt.Fprintln(w)
}

// secretGetter reads a Buildkite secret with `buildkite-agent secret get`;
// the agent redacts the value from the log.
func secretGetter(environ []string) func(ctx context.Context, name string) (string, error) {
	return func(ctx context.Context, name string) (string, error) {
		var out strings.Builder
		err := proc.Exec{}.Run(ctx, proc.Spec{Argv: []string{"buildkite-agent", "secret", "get", name}, Env: environ, Stdout: &out, Stderr: io.Discard})
		return out.String(), err
	}
}
