// Package report is the build's report step: it gathers every recipe's
// summary.json of the build and writes one annotation with a matrix of
// recipes and their headline numbers.
package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/benchkite/benchkite/internal/bisect"
	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
	"github.com/benchkite/benchkite/runner/internal/buildlog"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Context is the annotation context of the build-wide report.
const Context = "benchkite-report"

// Priority puts the build's report above every recipe's annotation
// (Buildkite shows 10 first; the agent's default is 3).
const Priority = "10"

// Config is what `runner report` reads; runner's CLI fills it from flags
// and the environment.
type Config struct {
	// Results holds <recipe>/summary.json.
	Results string
	// Download fetches this build's summaries with buildkite-agent first.
	Download bool
	// API is asked for the state of selected steps that left no summary.
	API baseline.APIConfig
	// BuildFDR is the build's false-alarm budget, the
	// Benjamini–Hochberg level over its regression tests;
	// gate.DefaultBuildFDR when zero.
	BuildFDR float64
	// states, when set, replaces the API (tests).
	states JobStates
	// bisect, when set, replaces the API and registry of bisection (tests).
	bisect *bisector
}

// JobStates gives the state of each job of this build by step key.
type JobStates func(ctx context.Context) (map[string]JobState, error)

// JobState is what the Buildkite API says of a step's latest try.
type JobState struct {
	State string
	// ExitStatus is nil before the command ends; -1 when the agent was lost.
	ExitStatus *int
	// SignalReason is the agent's reason for signalling or not running it.
	SignalReason string
	// Retried are the step's earlier tries, each retried.
	Retried []Try
}

// Try is one retried try of a step: its state, why and how long it ran.
type Try struct {
	State        string
	ExitStatus   *int
	SignalReason string
	Started      time.Time
	Finished     time.Time
}

func (s JobState) String() string {
	if s.ExitStatus != nil {
		return fmt.Sprintf("%s (exit status %d)", s.State, *s.ExitStatus)
	}
	return s.State
}

// Run is `runner report`: it writes the build-wide annotation and fails
// only for regressions it found. The agent and the API are bk's.
func Run(ctx context.Context, c Config, streams cliutil.Streams, getenv func(string) string, bk buildkite.Door) error {
	agent := bk.Agent
	agent.Log = streams.Stdout
	// One API client, built when first needed, for the job states and
	// the bisect: a build that needs neither needs no token.
	api := sync.OnceValues(func() (*bkapi.Client, error) { return bk.API(ctx, c.API.URL, c.API.TokenEnv, c.API.TokenSecret) })
	history := filepath.Join(c.Results, "_history", "baselines.json")
	sums, problems := c.gatherSummaries(ctx, agent, getenv, api, history, streams.Stdout)
	title := reportTitle(getenv)
	same := sameBuildComparisons(sums, c.Results)
	// gate is the one judge: the report asks it and renders.
	fdr, err := buildFDR(c.BuildFDR)
	if err != nil {
		return err
	}
	budget := gate.SpendBudget(sums, fdr)
	build := gate.JudgeBuild(sums, same, budget)
	sums = judgedSummaries(build)
	page := writeTrendPageFrom(ctx, c.Results, build, history, title, streams.Stdout)
	skipped := contract.ParseSkipped(getenv(contract.SkippedEnv))
	body := annotate.Cap(renderReport(build, problems, skipped, getenv("BUILDKITE_BUILD_URL"))+renderBudget(budget)+renderLifecycle(build.Rows), annotate.MaxBody)
	fmt.Fprint(streams.Stdout, body)
	if buildlog.InBuildkite(getenv) {
		publish(ctx, agent, build.Style, body, page, streams.Stdout)
	}
	if state := getenv(bisect.Env); state != "" || wantsBisect(build) {
		b, err := c.bisector(getenv, api)
		if err != nil {
			fmt.Fprintf(streams.Stdout, "runner: warning: bisect: %v\n", err)
		} else {
			bisectStep(ctx, b, build, sums, state, getenv(bisect.MACEnv), streams.Stdout)
		}
	}
	return buildOutcome(build, streams.Stdout)
}

// gatherSummaries are the build's summaries and what could not be read
// of them: downloaded first when c.Download says so, with the history the
// trend page draws and the samples the same-build comparisons read; a
// summary for each selected step that left none; each with its retried
// tries.
func (c Config) gatherSummaries(ctx context.Context, agent buildkite.Agent, getenv func(string) string, api func() (*bkapi.Client, error), history string, out io.Writer) ([]summary.Summary, []string) {
	selected, left := contract.ParseSelected(getenv(contract.SelectedEnv))
	if c.Download {
		downloadSummaries(ctx, agent, c.Results, selected, left)
		// The nights the recipes were judged against, for the trend page.
		if err := agent.Download(ctx, filepath.ToSlash(history), ".", contract.HistoryStepKey); err != nil {
			fmt.Fprintf(out, "runner: download the history: %v; the trend page shows tonight only\n", err)
		}
	}
	sums, problems := readSummaries(c.Results)
	if len(selected) > 0 || left > 0 {
		states := c.states
		if states == nil {
			states = apiStates(getenv, api)
		}
		jobs, err := states(ctx)
		var missing []summary.Summary
		missing, problems = lost(selected, left, sums, jobs, err, problems)
		sums = withRetries(append(missing, sums...), jobs)
	}
	if c.Download {
		downloadSamples(ctx, agent, c.Results, sums)
	}
	return sums, problems
}

// reportTitle is the trend page's title, with the build's number when
// known.
func reportTitle(getenv func(string) string) string {
	title := "benchkite: the nights of every recipe"
	if n := getenv("BUILDKITE_BUILD_NUMBER"); n != "" {
		title += ", build #" + n
	}
	return title
}

// buildFDR is the build's false-alarm budget: fdr, or
// gate.DefaultBuildFDR when zero; a usage error when it is not a
// fraction.
func buildFDR(fdr float64) (float64, error) {
	if fdr == 0 {
		fdr = gate.DefaultBuildFDR
	}
	if !(fdr > 0 && fdr < 1) {
		return 0, fmt.Errorf("%w: the build's false-alarm budget %g is not a fraction in (0, 1)", cliutil.ErrUsage, fdr)
	}
	return fdr, nil
}

// writeTrendPageFrom writes the trend page with the nights of the history
// file and says where; the page is "" when it could not be written,
// which only warns.
func writeTrendPageFrom(ctx context.Context, root string, build gate.Build, history, title string, out io.Writer) string {
	page, err := writeTrendPage(ctx, root, build, baseline.NewHistory(func(context.Context) (baseline.Source, error) {
		return baseline.FileSource(history), nil
	}), title)
	if err != nil {
		fmt.Fprintf(out, "runner: warning: %v\n", err)
	} else {
		fmt.Fprintf(out, "runner: wrote the trend page %s\n", page)
	}
	return page
}

// publish annotates the build with the report and uploads the trend
// page; a failure of either is said, not fatal.
func publish(ctx context.Context, agent buildkite.Agent, style, body, page string, out io.Writer) {
	if err := agent.Annotate(ctx, Context, style, Priority, body); err != nil {
		fmt.Fprintf(out, "runner: annotate: %v\n", err)
	}
	if page != "" {
		if err := agent.Upload(ctx, filepath.ToSlash(page)); err != nil {
			fmt.Fprintf(out, "runner: upload the trend page: %v\n", err)
		}
	}
}

// buildOutcome says how many recipes and same-build comparisons failed
// and is the build's exit status: nil when nothing fails it.
func buildOutcome(build gate.Build, out io.Writer) error {
	if build.Failing > 0 {
		fmt.Fprintf(out, "+++ :x: %d recipe(s) failed a gate\n", build.Failing)
	}
	if build.SameBuildFailing > 0 {
		fmt.Fprintf(out, "+++ :x: %d same-build comparison(s) failed\n", build.SameBuildFailing)
	}
	if build.Exit != 0 {
		return cliutil.Exit(build.Exit)
	}
	return nil
}

// judgedSummaries are the build's summaries in its rows' order, each with
// its verdict within the build's false-alarm budget.
func judgedSummaries(b gate.Build) []summary.Summary {
	out := make([]summary.Summary, len(b.Rows))
	for i, r := range b.Rows {
		out[i] = r.Summary
	}
	return out
}

// readSummaries reads dir/*/summary.json; unreadable ones are reported,
// not fatal. Directories an earlier run's results were moved aside to
// (<recipe>.old-<timestamp>) are not recipes and are skipped.
func readSummaries(dir string) ([]summary.Summary, []string) {
	var out []summary.Summary
	var problems []string
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "summary.json"))
	sort.Strings(matches)
	for _, m := range matches {
		if summary.IsSetAside(filepath.Dir(m)) {
			continue
		}
		s, err := summary.ReadFile(m)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		out = append(out, s)
	}
	if len(matches) == 0 {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, "no results directory "+dir)
		}
	}
	return out, problems
}
