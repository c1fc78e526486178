package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// gateConfig says where baselines come from.
type gateConfig struct {
	apiURL      string
	tokenEnv    string
	tokenSecret string
	branch      string
}

func (g *gateConfig) register(fs *flag.FlagSet, getenv func(string) string) {
	fs.StringVar(&g.apiURL, "api-url", orDefault(getenv("BENCHKITE_API_URL"), "https://api.buildkite.com/"), "Buildkite REST API for baselines (env BENCHKITE_API_URL)")
	fs.StringVar(&g.tokenEnv, "api-token-env", orDefault(getenv("BENCHKITE_API_TOKEN_ENV"), "BUILDKITE_API_TOKEN"), "env var holding the API token (env BENCHKITE_API_TOKEN_ENV)")
	fs.StringVar(&g.tokenSecret, "api-token-secret", orDefault(getenv("BENCHKITE_API_TOKEN_SECRET"), "BENCHKITE_API_TOKEN"), "Buildkite secret holding the API token when the env var is unset (env BENCHKITE_API_TOKEN_SECRET)")
	fs.StringVar(&g.branch, "baseline-branch", orDefault(getenv("BENCHKITE_BASELINE_BRANCH"), getenv("BUILDKITE_PIPELINE_DEFAULT_BRANCH")), "branch whose scheduled builds are baselines (env BENCHKITE_BASELINE_BRANCH; default the pipeline's default branch)")
}

func orDefault(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return v
}

// baselineSource gives past nights of a recipe; the Buildkite API in
// production, a fixture in tests.
type baselineSource interface {
	Last(ctx context.Context, recipe, stepKey string, n int) (baseline.Result, error)
}

// gater applies a recipe's gates to its summary.
type gater struct {
	res    *workloads.Resolved
	source func(ctx context.Context) (baselineSource, error)

	// The source is built once and every lookup made once, failures
	// included: a missing token or a refusing API would only fail again,
	// and each try may run buildkite-agent or call the API.
	built   bool
	src     baselineSource
	srcErr  error
	fetched map[string]fetched
}

type fetched struct {
	res baseline.Result
	err error
}

// apiSource builds the Buildkite API baseline source lazily: a recipe
// without baseline gates never needs a token.
func apiSource(c gateConfig, getenv func(string) string, procs proc.Runner, environ []string) func(ctx context.Context) (baselineSource, error) {
	return func(ctx context.Context) (baselineSource, error) {
		token, err := bkapi.TokenFromEnvOrSecret(ctx, getenv, secretGetter(procs, environ), c.tokenEnv, c.tokenSecret)
		if err != nil {
			return nil, err
		}
		client, err := bkapi.New(bkapi.Config{BaseURL: c.apiURL, Token: token,
			Org: getenv("BUILDKITE_ORGANIZATION_SLUG"), Pipeline: getenv("BUILDKITE_PIPELINE_SLUG")})
		if err != nil {
			return nil, err
		}
		current, _ := strconv.Atoi(getenv("BUILDKITE_BUILD_NUMBER"))
		return baseline.Fetcher{API: client, Branch: c.branch, CurrentBuild: current}, nil
	}
}

// secretGetter reads a Buildkite secret with `buildkite-agent secret get`;
// the agent also redacts the value from the job log.
func secretGetter(procs proc.Runner, environ []string) func(ctx context.Context, name string) (string, error) {
	return func(ctx context.Context, name string) (string, error) {
		var out strings.Builder
		err := procs.Run(ctx, proc.Spec{Argv: []string{"buildkite-agent", "secret", "get", name}, Env: environ, Stdout: &out, Stderr: io.Discard})
		return out.String(), err
	}
}

// gate is the gate phase: it fails when any gate failed. "No baseline"
// is a warning, never a pass in disguise: it is recorded and shown.
func (j *job) gate(ctx context.Context) error {
	j.sum.Gates = j.gates.apply(ctx, &j.sum)
	var failed []string
	for _, g := range j.sum.Gates {
		fmt.Fprintf(j.log, "%s %s\n", verdictMark(g.Verdict), g.Message)
		if g.Verdict == summary.VerdictFail {
			failed = append(failed, g.Message)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d gate(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

func (g *gater) apply(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	out := []summary.GateResult{}
	out = append(out, g.accuracy(ctx, sum)...)
	out = append(out, g.assertions(sum)...)
	out = append(out, g.regressions(ctx, sum)...)
	return out
}

// nights fetches, once per recipe and count, the last n passing nightlies.
func (g *gater) nights(ctx context.Context, recipe string, n int) (baseline.Result, error) {
	key := recipe + "/" + strconv.Itoa(n)
	if f, ok := g.fetched[key]; ok {
		return f.res, f.err
	}
	if g.source == nil {
		return baseline.Result{}, fmt.Errorf("%w: no baseline source", baseline.ErrNoBaseline)
	}
	if !g.built {
		g.built = true
		g.src, g.srcErr = g.source(ctx)
	}
	if g.srcErr != nil {
		return baseline.Result{}, fmt.Errorf("%w: %w", baseline.ErrNoBaseline, g.srcErr)
	}
	r, err := g.src.Last(ctx, recipe, contract.StepKey(recipe), n)
	if g.fetched == nil {
		g.fetched = map[string]fetched{}
	}
	g.fetched[key] = fetched{r, err}
	return r, err
}

func pct(delta float64) *float64 { return &delta }

func (g *gater) accuracy(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	var out []summary.GateResult
	for _, t := range g.res.Tasks {
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
func (g *gater) otherRecipeScore(ctx context.Context, recipe, task, metric string) (float64, string, error) {
	r, err := g.nights(ctx, recipe, 1)
	if err != nil {
		return 0, "", err
	}
	if len(r.Nights) == 0 {
		return 0, "", fmt.Errorf("%w: no passing nightly of %s", baseline.ErrNoBaseline, recipe)
	}
	n := r.Nights[0]
	s, err := summary.Read(strings.NewReader(string(n.Summary)))
	if err != nil {
		return 0, "", fmt.Errorf("%w: build %d: %w", baseline.ErrNoBaseline, n.BuildNumber, err)
	}
	for _, a := range s.Accuracy {
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
func (g *gater) configOf(run summary.BenchRun) *workloads.BenchConfig {
	if g.res.Recipe.Bench == nil {
		return nil
	}
	for i := range g.res.Recipe.Bench.Configs {
		if g.res.Recipe.Bench.Configs[i].Name == run.Config {
			return &g.res.Recipe.Bench.Configs[i]
		}
	}
	return nil
}

// assertions checks absolute bounds on the median result of every run;
// a run only has a median once every repetition was valid.
func (g *gater) assertions(sum *summary.Summary) []summary.GateResult {
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
func (g *gater) regressions(ctx context.Context, sum *summary.Summary) []summary.GateResult {
	var out []summary.GateResult
	for _, run := range sum.Bench {
		c := g.configOf(run)
		if c == nil {
			continue
		}
		policy := g.res.Recipe.Bench.RegressionFor(c)
		if policy == nil {
			continue
		}
		var history baseline.Result
		var histErr error
		if run.Status == summary.StatusOK {
			history, histErr = g.nights(ctx, sum.Recipe, policy.Nights)
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
			out = append(out, gr)
		}
	}
	return out
}

// pastValues reads one metric of one run out of every night's summary;
// nights without it count as missing.
func pastValues(r baseline.Result, run, metric string) []float64 {
	var out []float64
	for _, n := range r.Nights {
		s, err := summary.Read(strings.NewReader(string(n.Summary)))
		if err != nil {
			continue
		}
		for _, b := range s.Bench {
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
