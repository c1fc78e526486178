package report

import (
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// A baseline_from gate compares a recipe with another (the seed's EAGLE3
// gsm8k with the no-spec recipe's). The recipe's own step cannot see the
// other recipe's result of this build, so it judges against that recipe's
// latest passing night; when both ran in this build, the report step,
// which sees every summary of the build, decides with tonight's numbers.

// sameBuild is one such comparison.
type sameBuild struct {
	Recipe, From, Task, Metric string
	Value, Other, Tolerance    float64
	Pass                       bool
}

// sameBuildComparisons judges every baseline_from gate whose other recipe
// has tonight's score of the same task and metric.
func sameBuildComparisons(sums []summary.Summary) []sameBuild {
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
			out = append(out, sameBuild{Recipe: s.Recipe, From: g.BaselineFrom, Task: g.Subject, Metric: g.Metric,
				Value: *g.Value, Other: other, Tolerance: *g.Tolerance,
				// A score may rise, but not fall by more than the tolerance.
				Pass: *g.Value >= other-*g.Tolerance-1e-12})
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

func writeSameBuild(b *strings.Builder, cs []sameBuild) {
	if len(cs) == 0 {
		return
	}
	b.WriteString("#### Same-build comparisons\n\n")
	b.WriteString("Recipes whose accuracy gate names another recipe that also ran tonight, judged on tonight's scores of both.\n\n")
	b.WriteString("| verdict | recipe | task | metric | score | vs | its score | Δ | tolerance |\n|---|---|---|---|--:|---|--:|--:|--:|\n")
	for _, c := range cs {
		verdict := summary.VerdictPass
		if !c.Pass {
			verdict = summary.VerdictFail
		}
		fmt.Fprintf(b, "| %s %s | `%s` | %s | `%s` | %.4f | `%s` | %.4f | %+.4f | %g |\n", annotate.VerdictMark(verdict), verdict,
			annotate.Text(c.Recipe), annotate.Text(c.Task), annotate.Text(c.Metric), c.Value, annotate.Text(c.From), c.Other, c.Value-c.Other, c.Tolerance)
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
