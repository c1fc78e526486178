package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// A baseline_from gate compares a recipe with another (the seed's EAGLE3
// gsm8k with the no-spec recipe's). The recipe's own step cannot see the
// other recipe's result of this build, so it judges against that recipe's
// latest passing night; when both ran in this build, the report step,
// which sees every summary of the build, decides with tonight's results.
//
// It decides per question when it can: greedy speculative decoding should
// answer every question as decoding without it does, so both runs' lm_eval
// samples (results/<recipe>/<task>/**/samples_<task>_<date>.jsonl) are
// paired on doc_hash and the comparison fails only when McNemar's exact
// test finds the discordant questions lopsided (p below the gate's alpha)
// and the score is lower by more than the tolerance. Without both sample
// files it compares the two means against the tolerance, and says so.

// sameBuild is one such comparison.
type sameBuild struct {
	Recipe, From, Task, Metric string
	Value, Other, Tolerance    float64
	// Alpha is the gate's significance level; zero means paired's default.
	Alpha float64
	Pass  bool
	// Paired is the per-question comparison, nil when it could not be
	// made; Note then says why and the means decided.
	Paired *paired.Result
	Note   string
}

// sameBuildComparisons judges every baseline_from gate whose other recipe
// has tonight's score of the same task and metric; with dir, the results
// directory, per question where both sample files are there.
func sameBuildComparisons(sums []summary.Summary, dir string) []sameBuild {
	var out []sameBuild
	for _, s := range sums {
		for _, g := range s.Gates {
			if g.Kind != summary.GateAccuracy || g.BaselineFrom == "" || g.Tolerance == nil || g.Value == nil {
				continue
			}
			other, ok := score(sums, g.BaselineFrom, g.Subject, g.Metric)
			if !ok {
				continue
			}
			c := sameBuild{Recipe: s.Recipe, From: g.BaselineFrom, Task: g.Subject, Metric: g.Metric,
				Value: *g.Value, Other: other, Tolerance: *g.Tolerance,
				// A score may rise, but not fall by more than the tolerance.
				Pass: *g.Value >= other-*g.Tolerance-1e-12}
			if g.Alpha != nil {
				c.Alpha = *g.Alpha
			}
			if dir != "" {
				pairSamples(&c, dir)
			}
			out = append(out, c)
		}
	}
	return out
}

// pairSamples decides c per question when both runs' per-question
// outcomes (the compact file each job wrote) are in dir, else both runs'
// samples.
func pairSamples(c *sameBuild, dir string) {
	metric, filter, _ := strings.Cut(c.Metric, ",")
	opts := paired.Options{Metric: metric, Filter: filter, Alpha: c.Alpha, Tolerance: c.Tolerance}
	baseFile := filepath.Join(dir, c.From, c.Task, baseline.OutcomesFile)
	specFile := filepath.Join(dir, c.Recipe, c.Task, baseline.OutcomesFile)
	if fileExists(baseFile) || fileExists(specFile) {
		r, err := compareOutcomeFiles(baseFile, specFile, c.From, c.Metric, opts)
		if err == nil {
			c.Paired, c.Pass = &r, !r.Fail
			return
		}
		c.Note = fmt.Sprintf("not compared per question (%v); judged on the means", err)
		return
	}
	base, err := paired.LatestFile(filepath.Join(dir, c.From, c.Task), c.Task)
	if err == nil {
		var spec string
		spec, err = paired.LatestFile(filepath.Join(dir, c.Recipe, c.Task), c.Task)
		if err == nil {
			var r paired.Result
			r, err = paired.CompareFiles(base, spec, opts)
			if err == nil {
				c.Paired, c.Pass = &r, !r.Fail
				return
			}
		}
	}
	c.Note = fmt.Sprintf("not compared per question (%v); judged on the means", err)
}

// compareOutcomeFiles pairs two runs' outcomes files.
func compareOutcomeFiles(baseFile, specFile, from, metric string, opts paired.Options) (paired.Result, error) {
	base, err := baseline.ReadOutcomesFile(baseFile)
	if err != nil {
		return paired.Result{}, err
	}
	right, err := base.Right(metric)
	if err != nil {
		return paired.Result{}, err
	}
	spec, err := baseline.ReadOutcomesFile(specFile)
	if err != nil {
		return paired.Result{}, err
	}
	return paired.CompareOutcomes(paired.Outcomes{Source: from, Right: right}, spec.Samples(), opts)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// samplePatterns are the artifact paths of the sample files the
// same-build comparisons pair: both recipes' of each baseline_from task
// whose other recipe ran tonight.
func samplePatterns(sums []summary.Summary, dir string) [][2]string {
	var out [][2]string
	for _, c := range sameBuildComparisons(sums, "") {
		for _, recipe := range []string{c.Recipe, c.From} {
			p := [2]string{filepath.ToSlash(dir) + "/" + recipe + "/" + c.Task + "/" + baseline.OutcomesFile, contract.StepKey(recipe)}
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// downloadSamples fetches those files with buildkite-agent; a missing one
// leaves that comparison to the means.
func downloadSamples(ctx context.Context, procs proc.Exec, dir string, sums []summary.Summary, environ []string, io cliutil.Streams) {
	for _, p := range samplePatterns(sums, dir) {
		// From the recipe's own step only.
		spec := proc.Spec{Argv: []string{"buildkite-agent", "artifact", "download", p[0], ".", "--step", p[1]}, Env: environ, Stdout: io.Stdout, Stderr: io.Stdout}
		fmt.Fprintf(io.Stdout, "$ %s\n", proc.FormatArgv(spec.Argv))
		if err := procs.Run(ctx, spec); err != nil {
			fmt.Fprintf(io.Stdout, "runner: download samples: %v\n", err)
		}
	}
}

// score is recipe's tonight score of task and metric, when it has one.
func score(sums []summary.Summary, recipe, task, metric string) (float64, bool) {
	for _, s := range sums {
		if s.Recipe != recipe {
			continue
		}
		for _, a := range s.Accuracy {
			if a.Task == task && a.Status == summary.StatusOK {
				v, ok := a.Metrics[metric]
				return v, ok
			}
		}
	}
	return 0, false
}

func writeSameBuild(b *strings.Builder, cs []sameBuild) {
	if len(cs) == 0 {
		return
	}
	b.WriteString("#### Same-build comparisons\n\n")
	b.WriteString("Recipes whose accuracy gate names another recipe that also ran tonight, judged on tonight's results of both: per question (McNemar's exact test on the questions only one run got right) where both logged their samples, else on the means.\n\n")
	b.WriteString("| verdict | recipe | task | metric | score | vs | its score | Δ | tolerance | per question |\n|---|---|---|---|--:|---|--:|--:|--:|---|\n")
	for _, c := range cs {
		verdict := summary.VerdictPass
		if !c.Pass {
			verdict = summary.VerdictFail
		}
		perQ := "– (means)"
		if r := c.Paired; r != nil {
			perQ = fmt.Sprintf("%d pairs, %.1f%% agree, b %d, c %d, p %.3g", r.Pairs, r.OutcomeAgreement*100, r.B, r.C, r.P)
		}
		fmt.Fprintf(b, "| %s %s | `%s` | %s | `%s` | %.4f | `%s` | %.4f | %+.4f | %g | %s |\n", annotate.VerdictMark(verdict), verdict,
			annotate.Text(c.Recipe), annotate.Text(c.Task), annotate.Text(c.Metric), c.Value, annotate.Text(c.From), c.Other, c.Value-c.Other, c.Tolerance, perQ)
	}
	b.WriteString("\n")
	for _, c := range cs {
		why := c.Note
		if c.Paired != nil {
			why = c.Paired.Why
		}
		fmt.Fprintf(b, "- %s %s vs %s: %s\n", annotate.InlineCode(c.Recipe), annotate.Text(c.Task), annotate.InlineCode(c.From), annotate.Text(annotate.Clip(why, 600)))
	}
	b.WriteString("\n")
}

func sameBuildFailures(cs []sameBuild) int {
	n := 0
	for _, c := range cs {
		if !c.Pass {
			n++
		}
	}
	return n
}
