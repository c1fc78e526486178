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
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benchkite/benchkite/internal/bisect"
	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
	"github.com/benchkite/benchkite/runner/internal/buildlog"
	"github.com/benchkite/benchkite/runner/internal/classify"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/gputime"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

var (
	// jobIDRE is a Buildkite job id (a UUID), the only text a summary
	// may put into a link.
	jobIDRE = regexp.MustCompile(`^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$`)
	// safeURLRE is a build URL that cannot end a Markdown link early.
	safeURLRE = regexp.MustCompile(`^https?://[A-Za-z0-9._~/:%-]+$`)
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

// renderBudget shows the build's false-alarm budget and every regression
// still open or accepted.
func renderBudget(b gate.Budget) string {
	if len(b.Tests) == 0 {
		return ""
	}
	var w strings.Builder
	flagged, fails := 0, 0
	var released []string
	for _, t := range b.Tests {
		if t.Flagged {
			flagged++
		}
		if t.Fails {
			fails++
		}
		if t.Flagged && !t.Fails {
			released = append(released, fmt.Sprintf("%s %s (p %s)", annotate.InlineCode(t.Recipe), annotate.Text(t.Subject+" "+t.Metric), numfmt.P(t.P)))
		}
	}
	fmt.Fprintf(&w, "False-alarm budget: Benjamini–Hochberg at %s%% over %d regression tests: %d flagged, %d fail the build", numfmt.Exact(b.Q*100), len(b.Tests), flagged, fails)
	if len(released) > 0 {
		fmt.Fprintf(&w, "; within the budget, not failures: %s", strings.Join(released, ", "))
	}
	w.WriteString(".\n")
	return w.String()
}

// renderLifecycle lists the regressions still open (red every night the
// build's false-alarm budget keeps them, until fixed or accepted), those
// open the budget released tonight, and the accepted ones, with their
// record.
func renderLifecycle(rows []gate.Row) string {
	var w strings.Builder
	for _, r := range rows {
		s := r.Summary
		for _, g := range s.Gates {
			d := g.Detector
			if g.Kind != summary.GateRegression || d == nil {
				continue
			}
			name := annotate.InlineCode(s.Recipe) + " " + annotate.Text(g.Subject+" "+g.Metric)
			switch {
			case d.OpenSince > 0 && released(r, g):
				fmt.Fprintf(&w, "- released regression: %s, open since #%d (p %s): within the build's false-alarm budget, not a failure tonight; red on a night the budget keeps it, until fixed or accepted\n", name, d.OpenSince, numfmt.P(d.P))
			case d.OpenSince > 0:
				fmt.Fprintf(&w, "- open regression: %s since #%d; red until fixed or accepted (`regression.accept: {since, reason, metrics}` in the recipe)\n", name, d.OpenSince)
			}
			if d.Accepted != "" {
				fmt.Fprintf(&w, "- accepted regression: %s %s\n", name, annotate.Text(d.Accepted))
			}
		}
	}
	if w.Len() == 0 {
		return ""
	}
	return "\nRegressions:\n\n" + w.String()
}

// released says whether the build's false-alarm budget released the
// row's regression gate g.
func released(r gate.Row, g summary.GateResult) bool {
	return slices.ContainsFunc(r.Released, func(x summary.GateResult) bool {
		return x.Kind == g.Kind && x.Subject == g.Subject && x.Metric == g.Metric
	})
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

// headline picks a recipe's first OK bench run and first accuracy score
// for the matrix.
func headline(s summary.Summary) (run *summary.BenchRun, task *summary.TaskResult, metric string) {
	for i := range s.Bench {
		if s.Bench[i].Status == summary.StatusOK {
			run = &s.Bench[i]
			break
		}
	}
	for i := range s.Accuracy {
		if s.Accuracy[i].Status == summary.StatusOK {
			task = &s.Accuracy[i]
			for _, k := range []string{"exact_match,flexible-extract", "exact_match,strict-match"} {
				if _, ok := task.Metrics[k]; ok {
					return run, task, k
				}
			}
			if keys := summary.SortedKeys(task.Metrics); len(keys) > 0 {
				return run, task, keys[0]
			}
		}
	}
	return run, task, ""
}

// functionCalling sums up a recipe's BFCL results: how many were scored,
// and the lowest, which is the one a broken tool-call parser shows in.
func functionCalling(s summary.Summary) string {
	n, low, lowName := 0, 2.0, ""
	for _, a := range s.Accuracy {
		v, ok := a.Metrics[workloads.BFCLMetric]
		if !strings.HasPrefix(a.Task, "bfcl_") || a.Status != summary.StatusOK || !ok {
			continue
		}
		n++
		if v < low {
			low, lowName = v, strings.TrimPrefix(a.Task, "bfcl_")
		}
	}
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%d scored, lowest %s %s", n, annotate.Text(lowName), annotate.Num(low, annotate.Score))
}

// spread is the headline throughput's spread, per GPU: the range of
// tonight's repetitions, when there were several; the Δ column has the
// limit.
func spread(s summary.Summary, run *summary.BenchRun) string {
	for _, g := range s.Gates {
		d := g.Detector
		if g.Kind != summary.GateRegression || g.Subject != run.Name || g.Metric != "output_throughput" || d == nil {
			continue
		}
		per := func(v float64) float64 {
			if s.NumGPUs > 0 {
				return v / float64(s.NumGPUs)
			}
			return v
		}
		if d.Repetitions > 1 {
			return fmt.Sprintf(" (%s–%s)", annotate.Num(per(d.RepMin), annotate.TokensPerSec), annotate.Num(per(d.RepMax), annotate.TokensPerSec))
		}
		return ""
	}
	return ""
}

// row is one recipe of the report: its verdict as the build judges it
// (the same-build comparison can fail a recipe its own step passed), the
// reason, and how bad it is, for the order.
type row struct {
	s       summary.Summary
	verdict string // pass, regressed, fail, unverified, error
	reason  string
}

// verdictRegressed is a failed run whose every failed gate is a
// regression gate the budget keeps: slower, not wrong.
const verdictRegressed = gate.RowRegressed

// rowsOf is the build's rows with their reasons, worst first, then by
// name.
func rowsOf(b gate.Build) []row {
	var rows []row
	for _, gr := range b.Rows {
		s := gr.Summary
		r := row{s: s, verdict: gr.Verdict, reason: annotate.Reason(s)}
		if s.Failure != nil && s.Failure.Class != "" {
			r.reason = strings.TrimSpace(annotate.ClassTag(s.Failure)) + " " + r.reason
		}
		if len(gr.Released) > 0 && (gr.Verdict == summary.VerdictPass || gr.Verdict == summary.VerdictUnverified) {
			r.reason = "within the build's false-alarm budget, not a failure: " + r.reason
		}
		if c := gr.SameBuild; c != nil {
			r.reason = fmt.Sprintf("same-build comparison: %s %s %s vs %s %s (below)", annotate.Text(c.Task), annotate.Num(c.Value, annotate.Score),
				annotate.InlineCode(c.Metric), annotate.InlineCode(c.From), annotate.Num(c.Other, annotate.Score))
		}
		rows = append(rows, r)
	}
	return rows
}

// mark is the emoji of a row's verdict.
func mark(verdict string) string {
	if verdict == verdictRegressed {
		return annotate.VerdictMark(summary.VerdictFail)
	}
	return annotate.VerdictMark(verdict)
}

// gateOn is the regression or accuracy gate on subject and metric, the
// failed one when there are several.
func gateOn(s summary.Summary, subject, metric string) *summary.GateResult {
	var found *summary.GateResult
	for i, g := range s.Gates {
		if g.Subject == subject && g.Metric == metric && (found == nil || g.Verdict == summary.VerdictFail) {
			found = &s.Gates[i]
		}
	}
	return found
}

// judged is a cell's "Δ (limit)" from a gate, or "" when none judged it.
func judged(g *summary.GateResult) string {
	if g == nil || g.Verdict == summary.VerdictSkipped {
		return ""
	}
	delta := g.DeltaPct
	if delta == nil && g.Value != nil && g.Baseline != nil && *g.Baseline != 0 {
		d := (*g.Value - *g.Baseline) / *g.Baseline * 100
		delta = &d
	}
	out := ""
	if delta != nil {
		out = annotate.Pct(*delta) + " "
	}
	if l := annotate.Limit(*g); l != "" {
		out += "(limit " + l + ")"
	}
	out = strings.TrimSpace(out)
	if g.Verdict == summary.VerdictFail {
		out = "❌ " + out
	}
	return out
}

// writeClasses counts the build's red nights by class, the furthest from
// the code under test first: infra before harness before vLLM.
func writeClasses(b *strings.Builder, sums []summary.Summary) {
	counts := map[string]int{}
	for _, s := range sums {
		if s.Failure != nil && s.Failure.Class != "" {
			counts[s.Failure.Class]++
		}
	}
	var parts []string
	for _, c := range []classify.Class{classify.ClassInfra, classify.ClassHarness, classify.ClassVLLM, classify.ClassModel, classify.ClassAccuracy, classify.ClassPerf} {
		if n := counts[string(c)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
			delete(counts, string(c))
		}
	}
	for _, c := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", annotate.Text(c), counts[c]))
	}
	if len(parts) > 0 {
		fmt.Fprintf(b, "Red nights by class: %s.\n\n", strings.Join(parts, " · "))
	}
}

// writeGPUTime is the build's GPU time: the total, each phase's share
// with the largest named, what red nights lost and a skipped sweep saved,
// and the cost where the profiles give a price.
func writeGPUTime(b *strings.Builder, sums []summary.Summary) {
	t := gputime.Sum(sums)
	if (t.Runs == 0 || t.Total <= 0) && t.Tries() == 0 {
		return
	}
	gpuh := func(s float64) string { u, per := gpuUnit(s); return fmt.Sprintf("%.1f %s", s/per, u) }
	// The phases' shares are of the runs' own time, retried tries apart.
	runs := t.Total - t.Retried
	if t.Tries() > 0 {
		fmt.Fprintf(b, "**GPU time:** %s in all, %s over %d run(s)", gpuh(t.Total), gpuh(runs), t.Runs)
	} else {
		fmt.Fprintf(b, "**GPU time:** %s over %d run(s)", gpuh(t.Total), t.Runs)
	}
	if d := t.Dominant(); d != "" && runs > 0 {
		fmt.Fprintf(b, "; most in **%s** (%.0f%%)", d, t.Phases[d]/runs*100)
	}
	if t.Lost > 0 {
		fmt.Fprintf(b, "; %s lost to runs that could not be judged", gpuh(t.Lost))
	}
	if n := t.Tries(); n > 0 {
		fmt.Fprintf(b, "; %s held by %d retried tr%s (%s)", gpuh(t.Retried), n, map[bool]string{true: "y", false: "ies"}[n == 1], retriedClasses(t.RetriedTries))
	}
	if t.Saved > 0 {
		fmt.Fprintf(b, "; about %s saved by stopping sweeps after a failed first point", gpuh(t.Saved))
	}
	if t.Priced > 0 {
		fmt.Fprintf(b, "; cost %.2f", t.Cost)
		if t.Priced < t.Runs {
			fmt.Fprintf(b, " (%d of %d runs priced)", t.Priced, t.Runs)
		}
	}
	b.WriteString(".\n\n| phase |")
	for _, p := range gputime.Phases {
		fmt.Fprintf(b, " %s |", p)
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("--:|", len(gputime.Phases)))
	unit, per := gpuUnit(runs)
	fmt.Fprintf(b, "\n| %s |", unit)
	for _, p := range gputime.Phases {
		fmt.Fprintf(b, " %.1f |", t.Phases[p]/per)
	}
	b.WriteString("\n\n")
}

// gpuUnit is the unit GPU-seconds s read best in, with its size: hours
// from a tenth of one, then minutes, then seconds (a drill's runs), so
// that no amount shows as 0.0.
func gpuUnit(s float64) (string, float64) {
	switch {
	case s >= 360:
		return "GPU-h", 3600
	case s >= 60:
		return "GPU-min", 60
	}
	return "GPU-s", 1
}

// retriedClasses names the retried tries' classes by name; a try
// someone canceled has no class.
func retriedClasses(c map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		name := k
		if k == "" {
			name = "canceled"
		}
		parts = append(parts, fmt.Sprintf("%s %d", annotate.Text(name), c[k]))
	}
	return strings.Join(parts, " · ")
}

// renderReport is the build's annotation: the verdicts counted, the red
// nights by class, the matrix of recipes, the GPU time and cost, the
// same-build comparisons, and what was not run or could not be read.
func renderReport(build gate.Build, problems []string, skipped []contract.Skipped, buildURL string) string {
	var b strings.Builder
	rows := rowsOf(build)
	sums := judgedSummaries(build)
	writeVerdictLine(&b, rows, len(skipped), len(problems))
	writeClasses(&b, sums)
	writeMatrix(&b, rows, buildURL)
	writeGPUTime(&b, sums)
	writeCost(&b, rows)
	writeSameBuild(&b, build.Same)
	writeSkipped(&b, skipped)
	writeUnreadable(&b, problems)
	return b.String()
}

// writeVerdictLine is the report's heading: how many recipes each verdict
// has, worst first, and how many were not run or could not be read.
func writeVerdictLine(b *strings.Builder, rows []row, skipped, unreadable int) {
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.verdict]++
	}
	var parts []string
	for _, v := range []string{summary.VerdictError, summary.VerdictFail, verdictRegressed, summary.VerdictUnverified, summary.VerdictPass} {
		if n := counts[v]; n > 0 {
			word := map[string]string{summary.VerdictError: "could not be judged", summary.VerdictFail: "failed", verdictRegressed: "regressed",
				summary.VerdictUnverified: "unverified (soft-failed)", summary.VerdictPass: "passed"}[v]
			parts = append(parts, fmt.Sprintf("%d %s", n, word))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no results")
	}
	fmt.Fprintf(b, "### benchkite: %s of %d recipe(s)", strings.Join(parts, ", "), len(rows))
	if skipped > 0 {
		fmt.Fprintf(b, "; %d not run", skipped)
	}
	if unreadable > 0 {
		fmt.Fprintf(b, "; %d unreadable", unreadable)
	}
	b.WriteString("\n\n")
}

// writeMatrix is the table of recipes, one row each, worst first, with a
// link to the trend page.
func writeMatrix(b *strings.Builder, rows []row, buildURL string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "Worst first. <a href=\"artifact://%s\">The nights of every recipe</a> (trends, baselines, limits).\n\n", annotate.TrendPage)
	b.WriteString("| recipe | verdict | why | GPU | output tok/s per GPU | Δ (limit) | TTFT p50 ms | TPOT p50 ms | EAGLE acceptance | accuracy | Δ (limit) | BFCL |\n")
	b.WriteString("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		writeMatrixRow(b, r, buildURL)
	}
	b.WriteString("\n")
}

// writeMatrixRow is one recipe's row of the matrix: its verdict and why,
// its GPUs, its headline bench run's numbers and its headline score,
// each with the Δ and limit of the gate that judged it.
func writeMatrixRow(b *strings.Builder, r row, buildURL string) {
	s := r.s
	run, task, metric := headline(s)
	tput, tputD, ttft, tpot, accept := benchCells(s, run)
	acc, accD := "–", ""
	if task != nil && metric != "" {
		acc = fmt.Sprintf("%s %s", annotate.Text(task.Task), annotate.Num(task.Metrics[metric], annotate.Score))
		accD = judged(gateOn(s, task.Task, metric))
	}
	gpus := "–" // a job lost before it wrote its summary
	if s.GPU != "" {
		gpus = fmt.Sprintf("%s × %d", annotate.Text(s.GPU), s.NumGPUs)
	}
	fmt.Fprintf(b, "| %s | %s %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
		recipeCell(s, buildURL), mark(r.verdict), annotate.Text(r.verdict), r.reason, gpus, tput, tputD, ttft, tpot, accept, acc, accD, functionCalling(s))
}

// recipeCell is the recipe's name, linked to its job's log. A job id from
// a summary goes into a link only when it is one: anything else could
// close the link and open markup.
func recipeCell(s summary.Summary, buildURL string) string {
	name := annotate.InlineCode(s.Recipe)
	if s.Buildkite != nil && jobIDRE.MatchString(s.Buildkite.JobID) && safeURLRE.MatchString(buildURL) {
		name = fmt.Sprintf("[%s](%s#%s)", name, buildURL, s.Buildkite.JobID)
	}
	return name
}

// benchCells are the matrix's cells of the headline bench run: output
// throughput per GPU with its spread, its Δ (limit), TTFT, TPOT with its
// Δ, and EAGLE acceptance; "–" where there is no run.
func benchCells(s summary.Summary, run *summary.BenchRun) (tput, tputD, ttft, tpot, accept string) {
	tput, ttft, tpot, accept = "–", "–", "–", "–"
	if run == nil {
		return tput, tputD, ttft, tpot, accept
	}
	tput = annotate.Num(run.OutputThroughputPerGPU, annotate.TokensPerSec) + spread(s, run)
	tputD = judged(gateOn(s, run.Name, "output_throughput"))
	ttft = annotate.Num(run.TTFT.Median, annotate.Millis)
	tpot = annotate.Num(run.TPOT.Median, annotate.Millis)
	if d := judged(gateOn(s, run.Name, "median_tpot_ms")); d != "" {
		tpot += " " + d
	}
	if run.SpecDecode != nil {
		accept = annotate.Num(run.SpecDecode.AcceptanceRate, annotate.Percent)
	}
	return tput, tputD, ttft, tpot, accept
}

// writeSkipped lists the recipes the build did not run, with why.
func writeSkipped(b *strings.Builder, skipped []contract.Skipped) {
	if len(skipped) == 0 {
		return
	}
	b.WriteString("Not run in this build:\n\n")
	for _, s := range skipped {
		fmt.Fprintf(b, "- %s", annotate.InlineCode(s.Name))
		if s.Reason != "" {
			fmt.Fprintf(b, ": %s", annotate.Text(s.Reason))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// writeUnreadable lists the results that could not be read.
func writeUnreadable(b *strings.Builder, problems []string) {
	if len(problems) == 0 {
		return
	}
	b.WriteString("Results that could not be read:\n\n")
	for _, p := range problems {
		fmt.Fprintf(b, "- %s\n", annotate.Text(p))
	}
	b.WriteString("\n")
}
