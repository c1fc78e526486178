package workloads

import (
	"slices"
	"strings"
	"time"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// DefaultStartupTimeoutS is how long a server may take to answer when the
// recipe does not say: big checkpoints download before the engine starts.
const DefaultStartupTimeoutS = 3600

// MaxStartupTimeoutS bounds vllm.startup_timeout_s: a day, the longest a
// Buildkite step may run.
const MaxStartupTimeoutS = 24 * 3600

// startupMargin is the least a step must leave after the start-up wait:
// the bench, teardown and publishing need time of their own.
const startupMargin = 5 * time.Minute

// laterNodes are nodes that checks run after the whole recipe is decoded
// point at.
type laterNodes struct {
	timeout, image, startup, build *yaml.Node
}

// StartupTimeout is how long the runner waits for the server to answer,
// and what vLLM's VLLM_ENGINE_READY_TIMEOUT_S is set to.
func (r *Recipe) StartupTimeout() time.Duration {
	s := r.VLLM.StartupTimeoutS
	if s == 0 {
		s = DefaultStartupTimeoutS
	}
	return time.Duration(s) * time.Second
}

func (l *loader) decodeStartupTimeout(n *yaml.Node, v *VLLM) {
	l.nodes.startup = n
	v.StartupTimeoutS, _ = l.d.Int(n, "vllm.startup_timeout_s", 1, MaxStartupTimeoutS)
}

// checkStartupFits reports a step timeout that the server's start-up wait
// alone would use up: the job would be killed before it measured anything.
func (l *loader) checkStartupFits(r *Recipe) {
	if r.TimeoutInMinutes == 0 && l.nodes.startup == nil {
		return
	}
	step := time.Duration(r.StepTimeout()) * time.Minute
	startup := r.StartupTimeout()
	if startup+startupMargin <= step {
		return
	}
	at, what := l.nodes.startup, "vllm.startup_timeout_s"
	if at == nil {
		at, what = l.nodes.timeout, "timeout_in_minutes"
	}
	if at == nil {
		return
	}
	l.d.Errorf(at, "%s: the step's timeout (%d min) must exceed the server's start-up wait (vllm.startup_timeout_s %d s, default %d) by at least %d min, or the job is killed before it measures anything; raise timeout_in_minutes or lower startup_timeout_s",
		what, r.StepTimeout(), int(startup/time.Second), DefaultStartupTimeoutS, int(startupMargin/time.Minute))
}

// StartupMetrics are the start-up times a recipe's
// vllm.startup_regression may judge, in seconds, lower being better: the
// server's time to ready (the runner's clock) and the parts vLLM's log
// gives (runner/internal/startup; summary.json's startup).
var StartupMetrics = []string{"ready_s", "weights_load_s", "model_load_s", "torch_compile_s", "cuda_graphs_s", "engine_init_s"}

// StartupSubject is the gate subject of the start-up times.
const StartupSubject = "startup"

// decodeStartupRegression reads vllm.startup_regression: nights and
// max_missing as a bench regression has them, and metrics keyed by
// start-up time, each with its max_drop_pct (the least worsening, in
// percent, that is flagged). A start-up is better shorter; a direction,
// when given, must say so.
func (l *loader) decodeStartupRegression(n *yaml.Node) *Regression {
	const what = "vllm.startup_regression"
	d := l.d
	r := &Regression{Nights: DefaultRegressionNights, MaxMissing: -1}
	hasMetrics := false
	d.Fields(n, what, []strictyaml.Field{
		{Name: "nights", Decode: func(_, v *yaml.Node) { r.Nights, _ = d.Int(v, what+".nights", minDetectorNights, 50) }},
		{Name: "max_missing", Decode: func(_, v *yaml.Node) { r.MaxMissing, _ = d.Int(v, what+".max_missing", 0, 50) }},
		{Name: "metrics", Decode: func(_, v *yaml.Node) {
			hasMetrics = true
			d.Pairs(v, what+".metrics", func(k, mv *yaml.Node) {
				mwhat := what + ".metrics." + k.Value
				if !slices.Contains(StartupMetrics, k.Value) {
					d.Errorf(k, "%s.metrics: %q is not a start-up time; one of %s", what, k.Value, strings.Join(StartupMetrics, ", "))
					return
				}
				m := RegressionMetric{Metric: k.Value}
				var dropSet bool
				d.Fields(mv, mwhat, []strictyaml.Field{
					{Name: "direction", Decode: func(_, v *yaml.Node) {
						if s, ok := d.String(v, mwhat+".direction"); ok && s != "lower" {
							d.Errorf(v, "%s.direction: a start-up time is better lower, got %q", mwhat, s)
						}
					}},
					{Name: "max_drop_pct", Decode: func(_, v *yaml.Node) { m.MaxDropPct, dropSet = d.Float(v, mwhat+".max_drop_pct", 0, 100) }},
				})
				if mv.Kind != yaml.MappingNode {
					return
				}
				if !dropSet {
					d.Errorf(mv, "%s needs max_drop_pct", mwhat)
				}
				r.Metrics = append(r.Metrics, m)
			})
		}},
	})
	if n.Kind != yaml.MappingNode {
		return nil
	}
	if !hasMetrics {
		d.Errorf(n, "%s needs metrics: which start-up times to judge (%s)", what, strings.Join(StartupMetrics, ", "))
	}
	// Nothing to re-run: the start-up happens once a night.
	r.NoRerun = true
	if r.MaxMissing < 0 {
		r.MaxMissing = max(0, r.Nights-MinRegressionNights)
	}
	if r.Nights-r.MaxMissing < minDetectorNights {
		d.Errorf(n, "%s.max_missing (%d) must leave at least %d of the %d nights: the detector estimates the noise from them", what, r.MaxMissing, minDetectorNights, r.Nights)
	}
	return r
}
