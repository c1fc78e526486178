// Package gate judges a run's results: accuracy bounds, bench assertions, and
// perf regressions against the recipe's past nights.
package gate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// APIConfig says where the Buildkite API baselines come from.
type APIConfig struct {
	URL         string // REST API base
	TokenEnv    string // env var holding the API token
	TokenSecret string // Buildkite secret holding it when the env var is unset
	Branch      string // branch whose scheduled builds are baselines
}

// Gater applies a recipe's gates to its summary.
type Gater struct {
	Res     *workloads.Resolved
	History *baseline.History
}

// APISource builds the Buildkite API baseline source lazily: a recipe
// without baseline gates never needs a token.
func APISource(c APIConfig, getenv func(string) string, secret func(ctx context.Context, name string) (string, error)) func(ctx context.Context) (baseline.Source, error) {
	return func(ctx context.Context) (baseline.Source, error) {
		token, err := bkapi.TokenFromEnvOrSecret(ctx, getenv, secret, c.TokenEnv, c.TokenSecret)
		if err != nil {
			return nil, err
		}
		client, err := bkapi.New(bkapi.Config{BaseURL: c.URL, Token: token,
			Org: getenv("BUILDKITE_ORGANIZATION_SLUG"), Pipeline: getenv("BUILDKITE_PIPELINE_SLUG")})
		if err != nil {
			return nil, err
		}
		current, _ := strconv.Atoi(getenv("BUILDKITE_BUILD_NUMBER"))
		return baseline.Fetcher{API: client, Branch: c.Branch, CurrentBuild: current}, nil
	}
}

// Apply judges sum by every gate of the recipe: accuracy bounds, bench
// assertions and perf regressions against past nights.
func (g Gater) Apply(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	out := []summary.GateResult{}
	out = append(out, g.accuracy(ctx, sum)...)
	out = append(out, g.assertions(sum)...)
	out = append(out, g.regressions(ctx, sum)...)
	return out
}

func pct(delta float64) *float64 { return &delta }

// judged is one accuracy result with the expectations on it: an lm_eval
// task, or a BFCL category (bfcl_<category>, metric acc).
type judged struct {
	Name   string
	Expect []workloads.Expectation
}

// accuracyGates are every lm_eval task's and BFCL category's expectations.
func (g Gater) accuracyGates() []judged {
	var out []judged
	for _, t := range g.Res.Tasks {
		out = append(out, judged{t.Name, t.Expect})
	}
	if b := g.Res.BFCL; b != nil {
		for _, bg := range b.Gates {
			e := bg.Expect
			e.Metric = workloads.BFCLMetric
			out = append(out, judged{workloads.BFCLResultName(bg.Category), []workloads.Expectation{e}})
		}
	}
	return out
}

func (g Gater) accuracy(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	var out []summary.GateResult
	for _, t := range g.accuracyGates() {
		var tr *summary.TaskResult
		for i := range sum.Accuracy {
			if sum.Accuracy[i].Task == t.Name {
				tr = &sum.Accuracy[i]
			}
		}
		for _, e := range t.Expect {
			gr := summary.GateResult{Kind: summary.GateAccuracy, Subject: t.Name, Metric: e.Metric}
			value, ok := 0.0, false
			if tr != nil && tr.Status == summary.StatusOK {
				value, ok = tr.Metrics[e.Metric]
			}
			if !ok {
				gr.Verdict = summary.VerdictSkipped
				gr.Bound = describeBound(e)
				gr.Message = fmt.Sprintf("%s %s: no score to judge (the task did not produce this metric)", t.Name, e.Metric)
				out = append(out, gr)
				continue
			}
			gr.Value = value
			if e.Min != nil {
				c := gr
				c.Bound = fmt.Sprintf(">= %g", *e.Min)
				c.Verdict = verdictOf(value >= *e.Min)
				c.Message = fmt.Sprintf("%s %s = %.4f, must be %s", t.Name, e.Metric, value, c.Bound)
				out = append(out, c)
			}
			if e.Baseline == nil && e.BaselineFrom == "" {
				continue
			}
			c := gr
			if e.BaselineFrom != "" {
				tol := e.Tolerance
				c.BaselineFrom, c.Tolerance = e.BaselineFrom, &tol
			}
			var base float64
			var source string
			if e.Baseline != nil {
				base, source = *e.Baseline, "baseline"
			} else {
				b, from, err := g.otherRecipeScore(ctx, e.BaselineFrom, t.Name, e.Metric)
				if err != nil {
					c.Verdict = summary.VerdictNoBaseline
					c.Bound = fmt.Sprintf("within %g of %s", e.Tolerance, e.BaselineFrom)
					c.Message = fmt.Sprintf("%s %s = %.4f: no baseline from %s (%v)", t.Name, e.Metric, value, e.BaselineFrom, err)
					out = append(out, c)
					continue
				}
				base, source = b, from
			}
			c.Baseline = &base
			if base != 0 {
				c.DeltaPct = pct((value - base) / base * 100)
			}
			c.Bound = fmt.Sprintf(">= %.4f (%s %.4f - %g)", base-e.Tolerance, source, base, e.Tolerance)
			// A score may rise, but not fall by more than the tolerance.
			c.Verdict = verdictOf(value >= base-e.Tolerance-1e-12)
			c.Message = fmt.Sprintf("%s %s = %.4f vs %s %.4f (Δ %+.4f, tolerance %g)", t.Name, e.Metric, value, source, base, value-base, e.Tolerance)
			out = append(out, c)
		}
	}
	return out
}

// otherRecipeScore reads a task metric from another recipe's latest
// passing nightly.
func (g Gater) otherRecipeScore(ctx context.Context, recipe, task, metric string) (float64, string, error) {
	r, err := g.History.Last(ctx, recipe, 1)
	if err != nil {
		return 0, "", err
	}
	if len(r.Nights) == 0 {
		return 0, "", fmt.Errorf("%w: no passing nightly of %s", baseline.ErrNoBaseline, recipe)
	}
	n := r.Nights[0]
	for _, a := range n.Summary.Accuracy {
		if a.Task == task {
			if v, ok := a.Metrics[metric]; ok {
				return v, fmt.Sprintf("%s #%d", recipe, n.BuildNumber), nil
			}
		}
	}
	return 0, "", fmt.Errorf("%w: %s #%d has no %s %s", baseline.ErrNoBaseline, recipe, n.BuildNumber, task, metric)
}

func describeBound(e workloads.Expectation) string {
	var parts []string
	if e.Min != nil {
		parts = append(parts, fmt.Sprintf(">= %g", *e.Min))
	}
	if e.Baseline != nil {
		parts = append(parts, fmt.Sprintf("baseline %g - %g", *e.Baseline, e.Tolerance))
	}
	if e.BaselineFrom != "" {
		parts = append(parts, fmt.Sprintf("within %g of %s", e.Tolerance, e.BaselineFrom))
	}
	return strings.Join(parts, ", ")
}

func verdictOf(ok bool) string {
	if ok {
		return summary.VerdictPass
	}
	return summary.VerdictFail
}

// configOf finds a bench run's config in the recipe.
func (g Gater) configOf(run summary.BenchRun) *workloads.BenchConfig {
	if g.Res.Recipe.Bench == nil {
		return nil
	}
	for i := range g.Res.Recipe.Bench.Configs {
		if g.Res.Recipe.Bench.Configs[i].Name == run.Config {
			return &g.Res.Recipe.Bench.Configs[i]
		}
	}
	return nil
}

// assertions checks absolute bounds on the median result of every run;
// a run only has a median once every repetition was valid.
func (g Gater) assertions(sum *summary.Summary) []summary.GateResult {
	var out []summary.GateResult
	for _, run := range sum.Bench {
		c := g.configOf(run)
		if c == nil {
			continue
		}
		for _, a := range c.Assertions {
			gr := summary.GateResult{Kind: summary.GateBench, Subject: run.Name, Metric: a.Metric, Bound: boundText(a)}
			v, ok := run.Metrics[a.Metric]
			if run.Status != summary.StatusOK || !ok {
				gr.Verdict = summary.VerdictSkipped
				gr.Message = fmt.Sprintf("%s %s: no value to judge (run %s)", run.Name, a.Metric, run.Status)
				out = append(out, gr)
				continue
			}
			gr.Value = v
			pass := (a.Min == nil || v >= *a.Min) && (a.Max == nil || v <= *a.Max)
			gr.Verdict = verdictOf(pass)
			gr.Message = fmt.Sprintf("%s %s = %.4g, must be %s", run.Name, a.Metric, v, gr.Bound)
			out = append(out, gr)
		}
	}
	return out
}

func boundText(a workloads.Assertion) string {
	switch {
	case a.Min != nil && a.Max != nil:
		return fmt.Sprintf("in [%g, %g]", *a.Min, *a.Max)
	case a.Min != nil:
		return fmt.Sprintf(">= %g", *a.Min)
	default:
		return fmt.Sprintf("<= %g", *a.Max)
	}
}

// regressions compares each run with the median of the recipe's last
// passing nightlies.
func (g Gater) regressions(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	var out []summary.GateResult
	for _, run := range sum.Bench {
		c := g.configOf(run)
		if c == nil {
			continue
		}
		policy := g.Res.Recipe.Bench.RegressionFor(c)
		if policy == nil {
			continue
		}
		var history baseline.Nights
		var histErr error
		var series string
		if run.Status == summary.StatusOK {
			history, histErr = g.History.Last(ctx, sum.Recipe, policy.Nights)
			history, series = Comparable(history, sum.Fingerprint)
		}
		for _, m := range policy.Metrics {
			gr := summary.GateResult{Kind: summary.GateRegression, Subject: run.Name, Metric: m.Metric}
			dir := "higher is better"
			if !m.HigherIsBetter {
				dir = "lower is better"
			}
			gr.Bound = fmt.Sprintf("within %g%% of the median of the last %d nights (%s)", m.MaxDropPct, policy.Nights, dir)
			v, ok := run.Metrics[m.Metric]
			if run.Status != summary.StatusOK || !ok {
				gr.Verdict = summary.VerdictSkipped
				gr.Message = fmt.Sprintf("%s %s: no value to compare (run %s)", run.Name, m.Metric, run.Status)
				out = append(out, gr)
				continue
			}
			gr.Value = v
			if histErr != nil {
				gr.Verdict = summary.VerdictNoBaseline
				gr.Message = fmt.Sprintf("%s %s = %.4g: no baseline (%v)", run.Name, m.Metric, v, histErr)
				out = append(out, gr)
				continue
			}
			values := pastValues(history, run.Name, m.Metric)
			if missing := policy.Nights - len(values); missing > policy.MaxMissing || len(values) == 0 {
				gr.Verdict = summary.VerdictNoBaseline
				gr.Message = fmt.Sprintf("%s %s = %.4g: only %d of %d past nights have it (at most %d may be missing)", run.Name, m.Metric, v, len(values), policy.Nights, policy.MaxMissing)
				if series != "" {
					gr.Message += "; " + series
				}
				out = append(out, gr)
				continue
			}
			base := median(values)
			gr.Baseline = &base
			delta := 0.0
			if base != 0 {
				delta = (v - base) / base * 100
			}
			gr.DeltaPct = pct(delta)
			worse := delta
			if m.HigherIsBetter {
				worse = -delta
			}
			gr.Verdict = verdictOf(worse <= m.MaxDropPct)
			gr.Message = fmt.Sprintf("%s %s = %.4g vs median %.4g of %d nights (%+.1f%%, allowed %g%% worse)", run.Name, m.Metric, v, base, len(values), delta, m.MaxDropPct)
			if series != "" {
				gr.Message += "; " + series
			}
			out = append(out, gr)
		}
	}
	return out
}

// pastValues reads one metric of one run out of every night's summary;
// nights without it count as missing.
func pastValues(r baseline.Nights, run, metric string) []float64 {
	var out []float64
	for _, n := range r.Nights {
		for _, b := range n.Summary.Bench {
			if b.Name == run && b.Status == summary.StatusOK {
				if v, ok := b.Metrics[metric]; ok && !math.IsNaN(v) {
					out = append(out, v)
				}
			}
		}
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
