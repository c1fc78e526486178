package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// A baseline_from gate compares a recipe with another (the seed's EAGLE3
// gsm8k with the no-spec recipe's). The recipe's own step cannot see the
// other recipe's result of this build, so it judges against that recipe's
// latest passing night; when both ran in this build, the report step,
// which sees every summary of the build, asks SameBuildComparisons to
// decide with tonight's results. The rules are the gate's own: per
// question (McNemar's exact one-sided test on the questions only one run
// got right, at least paired.DefaultMinPairs of them, else unverified)
// when both runs' samples are there, else the means against the
// tolerance, and says so.

// SameBuild is one such comparison and its verdict.
type SameBuild struct {
	Recipe, From, Task, Metric string
	Value, Other, Tolerance    float64
	// Alpha is the gate's significance level; zero means paired's default.
	Alpha float64
	// Verdict is pass, fail or unverified (too few questions paired).
	Verdict string
	// Paired is the per-question comparison, nil when it could not be
	// made; Note then says why and the means decided.
	Paired *paired.Result
	Note   string
}

// SameBuildComparisons judges every baseline_from gate whose other recipe
// has tonight's score of the same task and metric; with dir, the results
// directory, per question where both sample files are there.
func SameBuildComparisons(sums []summary.Summary, dir string) []SameBuild {
	var out []SameBuild
	for _, s := range sums {
		for _, g := range s.Gates {
			if g.Kind != summary.GateAccuracy || g.BaselineFrom == "" || g.Tolerance == nil || g.Value == nil {
				continue
			}
			other, ok := score(sums, g.BaselineFrom, g.Subject, g.Metric)
			if !ok {
				continue
			}
			c := SameBuild{Recipe: s.Recipe, From: g.BaselineFrom, Task: g.Subject, Metric: g.Metric,
				Value: *g.Value, Other: other, Tolerance: *g.Tolerance,
				// A score may rise, but not fall by more than the tolerance.
				Verdict: verdictOf(*g.Value >= other-*g.Tolerance-1e-12)}
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
func pairSamples(c *SameBuild, dir string) {
	metric, filter, _ := strings.Cut(c.Metric, ",")
	opts := paired.Options{Metric: metric, Filter: filter, Alpha: c.Alpha}
	decide := func(r paired.Result) {
		c.Paired, c.Verdict = &r, verdictOf(!r.Fail)
		if r.Unverified {
			c.Verdict = summary.VerdictUnverified
		}
	}
	baseFile := filepath.Join(dir, c.From, c.Task, baseline.OutcomesFile)
	specFile := filepath.Join(dir, c.Recipe, c.Task, baseline.OutcomesFile)
	if fileExists(baseFile) || fileExists(specFile) {
		r, err := compareOutcomeFiles(baseFile, specFile, c.From, c.Metric, opts)
		if err == nil {
			decide(r)
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
				decide(r)
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
	return paired.CompareOutcomes(paired.Outcomes{Source: from, Right: right, ByHash: base.ByHash()}, spec.Samples(), opts)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// SameBuildSamples are the artifact paths of the per-question outcome
// files the same-build comparisons pair, each with the step key of the
// job that uploaded it: both recipes' of each baseline_from task whose
// other recipe ran tonight.
func SameBuildSamples(sums []summary.Summary, dir string) [][2]string {
	var out [][2]string
	for _, c := range SameBuildComparisons(sums, "") {
		for _, recipe := range []string{c.Recipe, c.From} {
			p := [2]string{filepath.ToSlash(dir) + "/" + recipe + "/" + c.Task + "/" + baseline.OutcomesFile, contract.StepKey(recipe)}
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
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
