package gate

import (
	"context"
	"fmt"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// aiperfRun is one run an aiperf config planned, and its summary entry;
// run is nil when the summary has none.
type aiperfRun struct {
	name string
	run  *summary.BenchRun
}

// aiperfRuns are the runs of an aiperf config: every point it plans, each
// with its summary entry or none, so that a point that left no result is
// judged unmeasured rather than passed over; then any entry it did not
// plan. A config that failed as a whole has one entry of its own name,
// which stands for every point.
func aiperfRuns(sum *summary.Summary, c workloads.AIPerfConfig) []aiperfRun {
	subject := workloads.AIPerfSubject(c.Name, "")
	byName := map[string]*summary.BenchRun{}
	var entries []*summary.BenchRun
	for i := range sum.Bench {
		if b := &sum.Bench[i]; b.Config == subject && b.Backend == "aiperf" {
			entries = append(entries, b)
			byName[b.Name] = b
		}
	}
	if whole, ok := byName[subject]; ok {
		return []aiperfRun{{subject, whole}}
	}
	if len(entries) == 0 {
		return []aiperfRun{{subject, nil}} // aiperf did not run
	}
	planned, err := c.Points()
	if err != nil {
		planned = nil // the job failed the config for it; its entries say so
	}
	var out []aiperfRun
	seen := map[string]bool{}
	for _, p := range planned {
		name := workloads.AIPerfSubject(c.Name, p.Name)
		out = append(out, aiperfRun{name, byName[name]})
		seen[name] = true
	}
	for _, b := range entries {
		if !seen[b.Name] {
			out = append(out, aiperfRun{b.Name, b})
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
			for _, r := range runs {
				gr := summary.GateResult{Kind: summary.GateBench, Subject: r.name, Metric: as.Metric, Bound: boundText(as)}
				if r.run == nil {
					out = append(out, unmeasured(gr, sum, summary.PhaseAIPerf, notRun(c, r.name)))
					continue
				}
				v, why := benchValue(r.run, as.Metric)
				if why != "" {
					out = append(out, unmeasured(gr, sum, summary.PhaseAIPerf, why))
					continue
				}
				gr.Value = &v
				gr.Verdict = verdictOf((as.Min == nil || v >= *as.Min) && (as.Max == nil || v <= *as.Max))
				gr.Message = fmt.Sprintf("%s %s = %s, must be %s", r.name, as.Metric, numfmt.Sig(v, 4), gr.Bound)
				out = append(out, gr)
			}
		}
	}
	return out
}

// notRun says why a planned aiperf run has no result.
func notRun(c workloads.AIPerfConfig, name string) string {
	if name == workloads.AIPerfSubject(c.Name, "") {
		return "aiperf did not run"
	}
	return "no result for " + name + ", a sweep point the recipe plans"
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
		for _, r := range aiperfRuns(sum, c) {
			name, run := r.name, r.run
			var history baseline.Nights
			var histErr error
			if run != nil && run.Status == summary.StatusOK {
				history, histErr = g.History.Last(ctx, sum.Recipe, policy.Nights)
			}
			for _, m := range policy.Metrics {
				out = append(out, g.regression(sum, name, run, policy, m, history, histErr))
			}
		}
	}
	return out
}
