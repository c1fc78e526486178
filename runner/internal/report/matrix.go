package report

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/classify"
	"github.com/benchkite/benchkite/runner/internal/gate"
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
