package report

import (
	"context"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// sameBuild is a same-build comparison as gate decided it.
type sameBuild = gate.SameBuild

// sameBuildComparisons asks gate, the one judge, for the build's
// same-build comparisons.
func sameBuildComparisons(sums []summary.Summary, dir string) []sameBuild {
	return gate.SameBuildComparisons(sums, dir)
}

func samplePatterns(sums []summary.Summary, dir string) [][2]string {
	return gate.SameBuildSamples(sums, dir)
}

// downloadSamples fetches those files with buildkite-agent; a missing one
// leaves that comparison to the means.
func downloadSamples(ctx context.Context, agent buildkite.Agent, dir string, sums []summary.Summary) {
	for _, p := range samplePatterns(sums, dir) {
		// From the recipe's own step only.
		if err := agent.Download(ctx, p[0], ".", p[1]); err != nil {
			fmt.Fprintf(agent.Log, "runner: download samples: %v\n", err)
		}
	}
}

func writeSameBuild(b *strings.Builder, cs []sameBuild) {
	if len(cs) == 0 {
		return
	}
	b.WriteString("#### Same-build comparisons\n\n")
	b.WriteString("Recipes whose accuracy gate names another recipe that also ran tonight, judged on tonight's results of both: per question (McNemar's exact one-sided test on the questions only one run got right, unverified below 200 of them) where both logged their samples, else on the means.\n\n")
	b.WriteString("| verdict | recipe | task | metric | score | vs | its score | Δ | tolerance | per question |\n|---|---|---|---|--:|---|--:|--:|--:|---|\n")
	for _, c := range cs {
		verdict := c.Verdict
		perQ := "– (means)"
		if r := c.Paired; r != nil {
			perQ = fmt.Sprintf("%d pairs, %.1f%% agree, b %d, c %d, p %s", r.Pairs, r.OutcomeAgreement*100, r.B, r.C, numfmt.P(r.P))
		}
		fmt.Fprintf(b, "| %s %s | `%s` | %s | `%s` | %.4f | `%s` | %.4f | %+.4f | %s | %s |\n", annotate.VerdictMark(verdict), verdict,
			annotate.Text(c.Recipe), annotate.Text(c.Task), annotate.Text(c.Metric), c.Value, annotate.Text(c.From), c.Other, c.Value-c.Other, numfmt.Exact(c.Tolerance), perQ)
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
