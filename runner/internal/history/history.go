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
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
)

// Config is what `runner history` fetches and where it writes it;
// runner's CLI fills it from flags and the environment.
type Config struct {
	// Out is the directory to write: one file per recipe, and all of them
	// in one for the next build.
	Out string
	// Timeout bounds the fetches; what was fetched by then is written.
	Timeout time.Duration
	// Needs is the "recipe<TAB>nights" lines of contract.HistoryEnv.
	Needs string
	// NeedsFile, when set, holds Needs instead: a build of thousands of
	// recipes has more of them than an environment variable can carry.
	NeedsFile string
	API       baseline.APIConfig
}

// Run is `runner history`: it fetches the nights c.Needs names through
// the Buildkite API and writes them to c.Out. The file is written even
// when fetches fail, with the reasons, so the gates say why they have no
// baseline; the command then fails (exit 1) whenever a recipe's nights
// could not be fetched: no token, an unreachable API, a refused token.
// The agent and the API are bk's.
func Run(ctx context.Context, c Config, io cliutil.Streams, getenv func(string) string, bk buildkite.Door) error {
	return run(ctx, c, io, getenv, bk, nil)
}

// run is Run with the source replaceable in tests.
func run(ctx context.Context, c Config, streams cliutil.Streams, getenv func(string) string, bk buildkite.Door, source func(ctx context.Context) (baseline.Source, error)) error {
	needs, err := c.needs()
	if err != nil {
		return err
	}
	if source == nil {
		source = baseline.APISource(c.API, bk.API, getenv)
	}
	f := &baseline.File{Version: baseline.FileVersion, FetchedAt: time.Now().UTC(), Recipes: map[string]baseline.FileRecipe{}}
	f.BuildNumber, _ = strconv.Atoi(getenv("BUILDKITE_BUILD_NUMBER"))
	var failure error
	if len(needs) > 0 {
		var carried int
		carried, failure = fetchNeeds(ctx, c.Timeout, source, needs, f, streams.Stdout)
		// Said last, after what was written.
		defer fmt.Fprintf(streams.Stdout, "history: %d night(s) carried from the previous build's history, the rest fetched\n", carried)
	}
	if err := f.WriteDir(c.Out); err != nil {
		return err
	}
	fmt.Fprintf(streams.Stdout, "runner: wrote the nights of %d recipe(s) to %s\n", len(needs), c.Out)
	if failure != nil {
		fmt.Fprintf(streams.Stdout, "+++ :warning: %v\n", failure)
		return failure
	}
	return nil
}

// needs are the recipes and nights to fetch, from --needs or the needs
// file; a usage error when both are given or they do not parse.
func (c Config) needs() ([]contract.Need, error) {
	text := c.Needs
	if c.NeedsFile != "" {
		if text != "" {
			return nil, fmt.Errorf("%w: the needs come from %s or from --needs (%s), not both", cliutil.ErrUsage, c.NeedsFile, contract.HistoryEnv)
		}
		b, err := readNeedsFile(c.NeedsFile)
		if err != nil {
			return nil, err
		}
		text = b
	}
	needs, err := contract.ParseNeeds(text)
	if err != nil {
		if c.NeedsFile != "" {
			return nil, fmt.Errorf("%w: %s: %w", cliutil.ErrUsage, c.NeedsFile, err)
		}
		return nil, fmt.Errorf("%w: %w", cliutil.ErrUsage, err)
	}
	return needs, nil
}

// fetchNeeds records in f the nights of every need, fetched within
// timeout (DefaultTimeout when not positive), or the reason none could
// be. It returns how many nights were carried from the previous build's
// history, and why some recipe has no nights from the API.
func fetchNeeds(ctx context.Context, timeout time.Duration, source func(ctx context.Context) (baseline.Source, error), needs []contract.Need, f *baseline.File, w io.Writer) (int, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	src, failure := openSource(ctx, source, needs, w)
	carried := 0
	var apiErrs []error
	for _, n := range needs {
		key := contract.StepKey(n.Recipe)
		if failure != nil {
			f.Record(n.Recipe, key, n.Nights, baseline.Result{}, failure)
			continue
		}
		r, err := src.Last(ctx, n.Recipe, key, n.Nights)
		carried += r.Carried
		if len(n.Samples) > 0 {
			outcomes(ctx, w, src, n, &r)
		}
		f.Record(n.Recipe, key, n.Nights, r, err)
		report(w, n, r, err)
		if apiFailed(err) {
			apiErrs = append(apiErrs, fmt.Errorf("%s: %w", n.Recipe, err))
		}
	}
	if failure == nil && len(apiErrs) > 0 {
		failure = fmt.Errorf("the Buildkite API %s for %d of %d recipe(s): %w", apiProblem(apiErrs[0]), len(apiErrs), len(needs), errors.Join(apiErrs...))
	}
	return carried, failure
}

// openSource is the source of the build's nights, prepared for the
// deepest need when it fetches; an error when the build can have no
// baselines from it.
func openSource(ctx context.Context, source func(ctx context.Context) (baseline.Source, error), needs []contract.Need, w io.Writer) (baseline.Source, error) {
	src, err := source(ctx)
	if err != nil {
		return src, noBaselines(err)
	}
	fetcher, ok := src.(baseline.Fetcher)
	if !ok {
		return src, nil
	}
	// One build list for every recipe, and the nights the previous
	// build already fetched.
	deepest := 0
	for _, n := range needs {
		deepest = max(deepest, n.Nights)
	}
	if src, err = fetcher.Prepare(ctx, deepest, w); err != nil {
		return src, noBaselines(err)
	}
	return src, nil
}

// noBaselines is why the build has no baselines at all, in the words a
// person acts on.
func noBaselines(err error) error {
	return fmt.Errorf("no baselines for this build: %s: %w", apiProblem(err), err)
}

// apiFailed says whether a fetch failed because of the API (no token,
// unreachable, refused, wrong slugs) rather than for want of nights: a
// new recipe with no past night is not a failure of the history step.
func apiFailed(err error) bool {
	return errors.Is(err, bkapi.ErrNoToken) || errors.Is(err, bkapi.ErrUnavailable) ||
		errors.Is(err, bkapi.ErrUnauthorized) || errors.Is(err, bkapi.ErrNotFound)
}

// apiProblem names what went wrong in the words a person acts on.
func apiProblem(err error) string {
	switch {
	case errors.Is(err, bkapi.ErrNoToken):
		return "has no token"
	case errors.Is(err, bkapi.ErrUnauthorized):
		return "refused the token (unauthorised)"
	case errors.Is(err, bkapi.ErrNotFound):
		return "did not find the pipeline or build (not found)"
	case errors.Is(err, bkapi.ErrUnavailable):
		return "could not be reached (unreachable)"
	}
	return "failed"
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
			if hasOutcomes(night.Outcomes, task) {
				continue // carried from the previous build's history
			}
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

// hasOutcomes reports whether a night already holds the task's outcomes.
func hasOutcomes(os []baseline.Outcomes, task string) bool {
	for _, o := range os {
		if o.Task == task && o.Missing == "" {
			return true
		}
	}
	return false
}

// DefaultTimeout bounds the history step's fetches, under the step's own
// timeout, so that what was fetched is still written and uploaded.
const DefaultTimeout = 10 * time.Minute

func report(w io.Writer, n contract.Need, r baseline.Result, err error) {
	var builds []string
	failed := 0
	for _, night := range r.Nights {
		b := fmt.Sprintf("#%d", night.BuildNumber)
		if night.Failed {
			b += " (failed)"
			failed++
		}
		builds = append(builds, b)
	}
	fmt.Fprintf(w, "%s: %d of %d night(s) %s", n.Recipe, len(r.Nights), n.Nights, strings.Join(builds, " "))
	if failed > 0 {
		fmt.Fprintf(w, ", %d failed", failed)
	}
	if len(r.Missed) > 0 {
		fmt.Fprintf(w, ", %d missed", len(r.Missed))
	}
	if err != nil {
		fmt.Fprintf(w, " (%v)", err)
	}
	fmt.Fprintln(w)
}

// maxNeedsFile bounds the needs file read: 100,000 recipes' lines.
const maxNeedsFile = 16 << 20

func readNeedsFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read the history's needs: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxNeedsFile+1))
	if err != nil {
		return "", fmt.Errorf("read the history's needs %s: %w", path, err)
	}
	if len(b) > maxNeedsFile {
		return "", fmt.Errorf("the history's needs %s are larger than %d MiB", path, maxNeedsFile>>20)
	}
	return string(b), nil
}
