package gate

import (
	"context"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// startupRun is a night's start-up as the regression detector reads a
// run: its times by key under the subject "startup"; nil when the night
// has none.
func startupRun(s *summary.Summary) *summary.BenchRun {
	if s.Startup == nil {
		return nil
	}
	return &summary.BenchRun{Name: workloads.StartupSubject, Status: summary.StatusOK, Metrics: s.Startup.Metrics(), File: "summary.json startup"}
}

// startupRegressions judges the server's start-up times against the
// recipe's past nights, as bench metrics are judged (opt-in:
// vllm.startup_regression). An attached server's start-up is not this
// run's to measure.
func (g Gater) startupRegressions(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	policy := g.Res.Recipe.VLLM.StartupRegression
	if policy == nil {
		return nil
	}
	run := startupRun(sum)
	var history baseline.Nights
	var histErr error
	if run != nil {
		history, histErr = g.History.Last(ctx, sum.Recipe, policy.Nights)
	}
	var out []summary.GateResult
	for _, m := range policy.Metrics {
		if run == nil {
			gr := summary.GateResult{Kind: summary.GateRegression, Subject: workloads.StartupSubject, Metric: m.Metric,
				Bound: "no worse than the past nights allow (lower is better)"}
			out = append(out, unmeasured(gr, sum, summary.PhaseServe, "the server did not become ready"))
			continue
		}
		out = append(out, g.regression(sum, workloads.StartupSubject, run, policy, m, history, histErr))
	}
	return out
}

// nightRuns are a past night's runs as pastValues reads them: its bench
// runs, and its start-up when the subject is the start-up.
func nightRuns(s summary.Summary, subject string) []summary.BenchRun {
	if subject != workloads.StartupSubject {
		return s.Bench
	}
	if r := startupRun(&s); r != nil {
		return []summary.BenchRun{*r}
	}
	return nil
}
