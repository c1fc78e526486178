// Package report is the build's report step: it gathers every recipe's
// summary.json of the build and writes one annotation with a matrix of
// recipes and their headline numbers.
package report

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/buildlog"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/proc"
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

// Config is what `runner report` reads; runner's CLI fills it from flags
// and the environment.
type Config struct {
	// Results holds <recipe>/summary.json.
	Results string
	// Download fetches this build's summaries with buildkite-agent first.
	Download bool
	// API is asked for the state of selected steps that left no summary.
	API gate.APIConfig
	// states, when set, replaces the API (tests).
	states JobStates
}

// JobStates gives the state of each job of this build by step key.
type JobStates func(ctx context.Context) (map[string]string, error)

// Run is `runner report`: it writes the build-wide annotation and fails
// only for regressions it found.
func Run(ctx context.Context, c Config, io cliutil.Streams, getenv func(string) string, environ []string) error {
	dir, download, states := &c.Results, &c.Download, c.states
	selected, left := contract.ParseSelected(getenv(contract.SelectedEnv))
	procs := proc.Exec{}
	if *download {
		downloadSummaries(ctx, procs, *dir, selected, left, environ, io)
	}
	sums, problems := readSummaries(*dir)
	if len(selected) > 0 || left > 0 {
		if states == nil {
			states = apiStates(c.API, getenv, environ)
		}
		var missing []summary.Summary
		missing, problems = lost(ctx, selected, left, sums, states, problems)
		sums = append(missing, sums...)
	}
	if *download {
		downloadSamples(ctx, procs, *dir, sums, environ, io)
	}
	same := sameBuildComparisons(sums, *dir)
	skipped := contract.ParseSkipped(getenv(contract.SkippedEnv))
	body := annotate.Cap(renderReport(sums, same, problems, skipped, getenv("BUILDKITE_BUILD_URL")), annotate.MaxBody)
	fmt.Fprint(io.Stdout, body)
	if buildlog.InBuildkite(getenv) {
		spec := proc.Spec{Argv: []string{"buildkite-agent", "annotate", "--context", Context, "--style", reportStyle(sums, same)}, Env: environ, Stdin: strings.NewReader(body), Stdout: io.Stdout, Stderr: io.Stdout}
		if err := procs.Run(ctx, spec); err != nil {
			fmt.Fprintf(io.Stdout, "runner: annotate: %v\n", err)
		}
	}
	if n := regressions(sums); n > 0 {
		fmt.Fprintf(io.Stdout, "+++ :x: %d recipe(s) failed a gate\n", n)
		return cliutil.Exit(1)
	}
	if n := sameBuildFailures(same); n > 0 {
		fmt.Fprintf(io.Stdout, "+++ :x: %d same-build comparison(s) failed\n", n)
		return cliutil.Exit(1)
	}
	return nil
}

// readSummaries reads dir/*/summary.json; unreadable ones are reported,
// not fatal.
func readSummaries(dir string) ([]summary.Summary, []string) {
	var out []summary.Summary
	var problems []string
	matches, _ := filepath.Glob(filepath.Join(dir, "*", "summary.json"))
	sort.Strings(matches)
	for _, m := range matches {
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

// regressedAgainstNights counts the recipes with a failed regression gate:
// a failed minimum score is a failure, not a regression.
func regressedAgainstNights(sums []summary.Summary) int {
	n := 0
	for _, s := range sums {
		for _, g := range s.Gates {
			if g.Kind == summary.GateRegression && g.Verdict == summary.VerdictFail {
				n++
				break
			}
		}
	}
	return n
}

// regressions counts the recipes that failed a gate.
func regressions(sums []summary.Summary) int {
	n := 0
	for _, s := range sums {
		if s.Verdict == summary.VerdictFail {
			n++
		}
	}
	return n
}

func reportStyle(sums []summary.Summary, same []sameBuild) string {
	if len(sums) == 0 {
		// Nothing to show is not a success.
		return "warning"
	}
	if sameBuildFailures(same) > 0 {
		return "error"
	}
	style := "success"
	for _, s := range sums {
		switch s.Verdict {
		case summary.VerdictFail:
			return "error"
		case summary.VerdictPass:
		default: // error, unverified, or anything unknown
			style = "warning"
		}
	}
	return style
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
	return fmt.Sprintf("%d scored, lowest %s %.4f", n, annotate.Text(lowName), low)
}

// spread is the headline throughput's spread, per GPU: tonight's
// repetitions, the history's noise and the detector's threshold, when the
// run has a regression gate on it.
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
		out := ""
		if d.Repetitions > 1 {
			out = fmt.Sprintf("%.1f–%.1f, ", per(d.RepMin), per(d.RepMax))
		}
		if g.Baseline == nil {
			return " (" + out + "not judged)"
		}
		return fmt.Sprintf(" (%snoise %.1f%%, limit −%.1f%%)", out, d.NoiseCVPct, d.ThresholdPct)
	}
	return ""
}

func renderReport(sums []summary.Summary, same []sameBuild, problems []string, skipped []contract.Skipped, buildURL string) string {
	var b strings.Builder
	pass, fail, unverified, errs := 0, 0, 0, 0
	for _, s := range sums {
		switch s.Verdict {
		case summary.VerdictPass:
			pass++
		case summary.VerdictFail:
			fail++
		case summary.VerdictUnverified:
			unverified++
		default:
			errs++
		}
	}
	fmt.Fprintf(&b, "### benchkite: %d passed, %d failed", pass, fail)
	if n := regressedAgainstNights(sums); n > 0 {
		fmt.Fprintf(&b, " (%d regressed against past nights)", n)
	}
	b.WriteString(", ")
	if unverified > 0 {
		fmt.Fprintf(&b, "%d unverified (soft-failed), ", unverified)
	}
	fmt.Fprintf(&b, "%d could not be judged\n\n", errs)
	if len(sums) > 0 {
		b.WriteString("| recipe | verdict | GPU | output tok/s per GPU (reps; noise, limit) | TTFT p50 ms | TPOT p50 ms | EAGLE acceptance | accuracy | BFCL | failed gates |\n")
		b.WriteString("|---|---|---|--:|--:|--:|--:|--:|--:|---|\n")
		for _, s := range sums {
			name := annotate.InlineCode(s.Recipe)
			// A job id from a summary goes into a link only when it is
			// one: anything else could close the link and open markup.
			if s.Buildkite != nil && jobIDRE.MatchString(s.Buildkite.JobID) && safeURLRE.MatchString(buildURL) {
				name = fmt.Sprintf("[%s](%s#%s)", name, buildURL, s.Buildkite.JobID)
			}
			run, task, metric := headline(s)
			tput, ttft, tpot, accept, acc := "–", "–", "–", "–", "–"
			if run != nil {
				tput = fmt.Sprintf("%.1f", run.OutputThroughputPerGPU) + spread(s, run)
				ttft = fmt.Sprintf("%.1f", run.TTFT.Median)
				tpot = fmt.Sprintf("%.2f", run.TPOT.Median)
				if run.SpecDecode != nil {
					accept = fmt.Sprintf("%.1f%%", run.SpecDecode.AcceptanceRate)
				}
			}
			if task != nil && metric != "" {
				acc = fmt.Sprintf("%s %.4f", annotate.Text(task.Task), task.Metrics[metric])
			}
			fc := functionCalling(s)
			var failed []string
			for _, g := range s.Gates {
				if g.Verdict == summary.VerdictFail {
					failed = append(failed, annotate.Text(g.Subject+" "+g.Metric))
				}
			}
			if len(s.Phases) == 0 && len(s.Problems) > 0 {
				// No summary: what the build says of the step.
				failed = append(failed, annotate.Text(s.Problems[0]))
			}
			if s.Verdict != summary.VerdictPass && s.Verdict != summary.VerdictFail {
				for _, p := range s.Phases {
					if p.Status == summary.StatusFailed || p.Status == summary.StatusCanceled || p.Status == summary.StatusNotRun {
						failed = append(failed, annotate.Text(p.Name+" "+p.Status))
					}
				}
				for _, g := range s.Gates {
					if g.Verdict == summary.VerdictError || g.Verdict == summary.VerdictNoBaseline || g.Verdict == summary.VerdictUnverified {
						failed = append(failed, annotate.Text(g.Subject+" "+g.Metric+" "+g.Verdict))
					}
				}
			}
			fmt.Fprintf(&b, "| %s | %s %s | %s × %d | %s | %s | %s | %s | %s | %s | %s |\n",
				name, annotate.VerdictMark(s.Verdict), annotate.Text(s.Verdict), annotate.Text(s.GPU), s.NumGPUs, tput, ttft, tpot, accept, acc, fc, strings.Join(failed, ", "))
		}
		b.WriteString("\n")
	}
	writeSameBuild(&b, same)
	if len(skipped) > 0 {
		b.WriteString("Not run in this build:\n\n")
		for _, s := range skipped {
			fmt.Fprintf(&b, "- %s", annotate.InlineCode(s.Name))
			if s.Reason != "" {
				fmt.Fprintf(&b, ": %s", annotate.Text(s.Reason))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	if len(problems) > 0 {
		b.WriteString("Results that could not be read:\n\n")
		for _, p := range problems {
			fmt.Fprintf(&b, "- %s\n", annotate.Text(p))
		}
		b.WriteString("\n")
	}
	return b.String()
}
