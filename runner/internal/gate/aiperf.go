package gate

import (
	"context"
	"fmt"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// aiperfRuns are the summary entries of an aiperf config: one per sweep
// point, or the config's own entry when it failed as a whole.
func aiperfRuns(sum *summary.Summary, c workloads.AIPerfConfig) []*summary.BenchRun {
	subject := workloads.AIPerfSubject(c.Name, "")
	var out []*summary.BenchRun
	for i := range sum.Bench {
		if sum.Bench[i].Config == subject && sum.Bench[i].Backend == "aiperf" {
			out = append(out, &sum.Bench[i])
		}
	}
	return out
}

// aiperfAssertions bounds each aiperf point's keys as assertions bound a
// bench run's; a config that left no entry is unmeasured.
func (g Gater) aiperfAssertions(sum *summary.Summary) []summary.GateResult {
	a := g.Res.Recipe.AIPerf
	if a == nil {
		return nil
	}
	var out []summary.GateResult
	for _, c := range a.Configs {
		runs := aiperfRuns(sum, c)
		for _, as := range c.Assertions {
			if len(runs) == 0 {
				gr := summary.GateResult{Kind: summary.GateBench, Subject: workloads.AIPerfSubject(c.Name, ""), Metric: as.Metric, Bound: boundText(as)}
				out = append(out, unmeasured(gr, sum, summary.PhaseAIPerf, "aiperf did not run"))
				continue
			}
			for _, run := range runs {
				gr := summary.GateResult{Kind: summary.GateBench, Subject: run.Name, Metric: as.Metric, Bound: boundText(as)}
				v, why := benchValue(run, as.Metric)
				if why != "" {
					out = append(out, unmeasured(gr, sum, summary.PhaseAIPerf, why))
					continue
				}
				gr.Value = &v
				gr.Verdict = verdictOf((as.Min == nil || v >= *as.Min) && (as.Max == nil || v <= *as.Max))
				gr.Message = fmt.Sprintf("%s %s = %s, must be %s", run.Name, as.Metric, numfmt.Sig(v, 4), gr.Bound)
				out = append(out, gr)
			}
		}
	}
	return out
}

// aiperfRegressions judges each aiperf point against the recipe's
// comparable past nights, as bench runs are judged.
func (g Gater) aiperfRegressions(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	a := g.Res.Recipe.AIPerf
	if a == nil {
		return nil
	}
	var out []summary.GateResult
	for _, c := range a.Configs {
		policy := a.RegressionFor(&c)
		if policy == nil {
			continue
		}
		runs := aiperfRuns(sum, c)
		if len(runs) == 0 {
			runs = []*summary.BenchRun{nil}
		}
		for _, run := range runs {
			name := workloads.AIPerfSubject(c.Name, "")
			var history baseline.Nights
			var histErr error
			if run != nil {
				name = run.Name
				if run.Status == summary.StatusOK {
					history, histErr = g.History.Last(ctx, sum.Recipe, policy.Nights)
				}
			}
			for _, m := range policy.Metrics {
				out = append(out, g.regression(sum, name, run, policy, m, history, histErr))
			}
		}
	}
	return out
}
