// Package gate judges a run's results: accuracy bounds, bench assertions, and
// perf regressions against the recipe's past nights.
package gate

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// Gater applies a recipe's gates to its summary.
type Gater struct {
	Res     *workloads.Resolved
	History *baseline.History
	// ResultsDir is tonight's results directory, where lm_eval logged its
	// samples (<task>/...); empty, baseline_from gates compare means only.
	ResultsDir string
	// MinPairs is the fewest paired questions the per-question test
	// decides on; paired.DefaultMinPairs when zero.
	MinPairs int
}

// Apply judges sum by every gate of the recipe: accuracy bounds, bench
// assertions and perf regressions against past nights (the server's
// start-up among them, when the recipe opts in).
func (g Gater) Apply(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	out := []summary.GateResult{}
	out = append(out, g.accuracy(ctx, sum)...)
	out = append(out, g.assertions(sum)...)
	out = append(out, g.regressions(ctx, sum)...)
	out = append(out, g.aiperfAssertions(sum)...)
	out = append(out, g.aiperfRegressions(ctx, sum)...)
	out = append(out, g.startupRegressions(ctx, sum)...)
	out = append(out, g.specDecode(sum)...)
	return out
}

// Speculative reports whether the serve arguments configure speculative
// decoding in any of the spellings vLLM accepts: --speculative-config
// with a JSON value, its dotted sub-keys (--speculative-config.method),
// underscores for dashes, and --flag=value.
func Speculative(res *workloads.Resolved) bool {
	if res.Recipe.VLLM.Serve.Speculative != nil {
		return true
	}
	for _, a := range res.Recipe.VLLM.ServeArgs {
		flag, _, _ := strings.Cut(a, "=")
		flag = strings.ReplaceAll(flag, "_", "-")
		if flag == "--speculative-config" || strings.HasPrefix(flag, "--speculative-config.") {
			return true
		}
	}
	return false
}

// specDecode checks, when the recipe speculates, that every run reported
// acceptance: a server that never drafted measured a different thing,
// and the run cannot say whether speculation works.
func (g Gater) specDecode(sum *summary.Summary) []summary.GateResult {
	if !Speculative(g.Res) {
		return nil
	}
	var out []summary.GateResult
	for _, planned := range g.Res.BenchRuns {
		gr := summary.GateResult{Kind: summary.GateSpecDecode, Subject: planned.Name, Metric: "spec_decode_acceptance_rate", Bound: "reported (speculative decoding is configured)"}
		run := benchRun(sum, planned.Name)
		if run == nil || run.Status != summary.StatusOK {
			_, why := benchValue(run, "")
			out = append(out, unmeasured(gr, sum, summary.PhaseBench, why))
			continue
		}
		if run.SpecDecode == nil {
			gr.Verdict = summary.VerdictUnverified
			gr.Message = fmt.Sprintf("%s: speculative decoding is configured but %s reports no acceptance metrics: the server may not have speculated", planned.Name, orFile(run.File))
			out = append(out, gr)
			continue
		}
		v := run.SpecDecode.AcceptanceRate
		gr.Value = &v
		gr.Verdict = summary.VerdictPass
		gr.Message = fmt.Sprintf("%s: acceptance rate %.1f%%, mean length %.2f", planned.Name, v, run.SpecDecode.AcceptanceLength)
		out = append(out, gr)
	}
	return out
}

func pct(delta float64) *float64 { return &delta }

// notPlanned says why a subject's phase was not planned ("bench only"),
// or "" when it was: only then is a missing value not an error.
func notPlanned(sum *summary.Summary, phase string) string {
	if p := sum.Phase(phase); p != nil && p.Status == summary.StatusSkipped {
		return p.Error
	}
	return ""
}

// unmeasured is a gate whose value is missing: skipped when its phase was
// not planned, an error otherwise.
func unmeasured(gr summary.GateResult, sum *summary.Summary, phase, why string) summary.GateResult {
	if np := notPlanned(sum, phase); np != "" {
		gr.Verdict = summary.VerdictSkipped
		gr.Message = fmt.Sprintf("%s %s: not planned (%s)", gr.Subject, gr.Metric, np)
		return gr
	}
	gr.Verdict = summary.VerdictError
	gr.Message = fmt.Sprintf("%s %s: not measured: %s", gr.Subject, gr.Metric, why)
	return gr
}

func orFile(f string) string {
	if f == "" {
		return "the results"
	}
	return f
}

func verdictOf(ok bool) string {
	if ok {
		return summary.VerdictPass
	}
	return summary.VerdictFail
}

// configOf finds a bench run's config in the recipe.
func (g Gater) configOf(config string) *workloads.BenchConfig {
	if g.Res.Recipe.Bench == nil {
		return nil
	}
	for i := range g.Res.Recipe.Bench.Configs {
		if g.Res.Recipe.Bench.Configs[i].Name == config {
			return &g.Res.Recipe.Bench.Configs[i]
		}
	}
	return nil
}

// benchRun finds the summary entry of a planned run, or nil.
func benchRun(sum *summary.Summary, name string) *summary.BenchRun {
	for i := range sum.Bench {
		if sum.Bench[i].Name == name {
			return &sum.Bench[i]
		}
	}
	return nil
}

// benchValue is a planned run's metric, or why there is none.
func benchValue(run *summary.BenchRun, metric string) (float64, string) {
	if run == nil {
		return 0, "the run did not happen"
	}
	if run.Status != summary.StatusOK {
		why := "the run is " + run.Status
		if run.Error != "" {
			why += ": " + firstLine(run.Error)
		}
		return 0, why
	}
	v, ok := run.Metrics[metric]
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Sprintf("%s has no numeric key %q", orFile(run.File), metric)
	}
	return v, ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// assertions checks absolute bounds on the median result of every
// planned run; a run only has a median once every repetition was valid.
func (g Gater) assertions(sum *summary.Summary) []summary.GateResult {
	var out []summary.GateResult
	for _, planned := range g.Res.BenchRuns {
		c := g.configOf(planned.Config)
		if c == nil {
			continue
		}
		run := benchRun(sum, planned.Name)
		for _, a := range c.Assertions {
			gr := summary.GateResult{Kind: summary.GateBench, Subject: planned.Name, Metric: a.Metric, Bound: boundText(a)}
			v, why := benchValue(run, a.Metric)
			if why != "" {
				out = append(out, unmeasured(gr, sum, summary.PhaseBench, why))
				continue
			}
			gr.Value = &v
			pass := (a.Min == nil || v >= *a.Min) && (a.Max == nil || v <= *a.Max)
			gr.Verdict = verdictOf(pass)
			gr.Message = fmt.Sprintf("%s %s = %s, must be %s", planned.Name, a.Metric, numfmt.Sig(v, 4), gr.Bound)
			out = append(out, gr)
		}
	}
	return out
}

func boundText(a workloads.Assertion) string {
	switch {
	case a.Min != nil && a.Max != nil:
		return fmt.Sprintf("in [%s, %s]", numfmt.Exact(*a.Min), numfmt.Exact(*a.Max))
	case a.Min != nil:
		return ">= " + numfmt.Exact(*a.Min)
	default:
		return "<= " + numfmt.Exact(*a.Max)
	}
}
