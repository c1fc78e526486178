package workloads

import (
	"slices"
	"strconv"
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

// maxStepTimeout is the longest step timeout, in minutes: a day.
const maxStepTimeout = 24 * 60

// startupMargin is the least a step must leave after the start-up wait:
// the bench, teardown and publishing need time of their own.
const startupMargin = 5 * time.Minute

// workAfterStartup is what a step whose timeout is raised to fit a long
// start-up wait keeps for the work after it: what the default step leaves
// after the default wait.
const workAfterStartup = DefaultTimeout*time.Minute - DefaultStartupTimeoutS*time.Second

// laterNodes are nodes that checks run after the whole recipe is decoded
// point at.
type laterNodes struct {
	timeout, image, startup, build *yaml.Node
	// engineReady is the value of the recipe's VLLM_ENGINE_READY_TIMEOUT_S.
	engineReady *yaml.Node
}

// EngineReadyTimeoutEnv is vLLM's own limit on engine start-up, 600 s by
// default: a large model dies there whatever the runner waits. The runner
// sets it to its start-up wait unless the recipe's env sets it.
const EngineReadyTimeoutEnv = "VLLM_ENGINE_READY_TIMEOUT_S"

// EngineReadyTimeout is what vLLM's engine start-up limit is in seconds,
// and whether the recipe's env set it (and so wins over the start-up wait).
func (r *Recipe) EngineReadyTimeout() (secs int, fromEnv bool) {
	for _, e := range r.VLLM.Env {
		if e.Name == EngineReadyTimeoutEnv {
			if n, err := strconv.Atoi(e.Value); err == nil {
				return n, true
			}
		}
	}
	return int(r.StartupTimeout() / time.Second), false
}

// checkEngineReady checks the recipe's own VLLM_ENGINE_READY_TIMEOUT_S:
// vLLM reads it as an integer, and a limit longer than the runner's wait
// for the server is never reached.
func (l *loader) checkEngineReady(r *Recipe) {
	n := l.nodes.engineReady
	if n == nil {
		return
	}
	secs, err := strconv.Atoi(n.Value)
	if err != nil || secs < 1 {
		l.d.Errorf(n, "vllm.env.%s %q: vLLM reads it as a whole number of seconds, at least 1", EngineReadyTimeoutEnv, n.Value)
		return
	}
	if wait := int(r.StartupTimeout() / time.Second); secs > wait {
		l.d.Warnf(n, "vllm.env.%s (%d s) is longer than the runner waits for the server (vllm.startup_timeout_s %d s): the runner gives up first; set startup_timeout_s to %d", EngineReadyTimeoutEnv, secs, wait, secs)
	}
}

// StartupTimeout is how long the runner waits for the server to answer,
// and what vLLM's VLLM_ENGINE_READY_TIMEOUT_S is set to unless the recipe's
// env sets it.
func (r *Recipe) StartupTimeout() time.Duration {
	s := r.VLLM.StartupTimeoutS
	if s == 0 {
		s = DefaultStartupTimeoutS
	}
	return time.Duration(s) * time.Second
}

func (l *loader) decodeStartupTimeout(k, n *yaml.Node, v *VLLM) {
	if l.nodes.startup != nil {
		l.d.Errorf(k, "vllm sets both startup_timeout_s and startup_timeout; keep startup_timeout_s")
		return
	}
	if k.Value == "startup_timeout" {
		// perf-eval's older recipes spell it so; they load, with a word.
		l.d.Warnf(k, "vllm.startup_timeout is the older spelling of vllm.startup_timeout_s (seconds); rename it")
	}
	l.nodes.startup = n
	v.StartupTimeoutS, _ = l.d.Int(n, "vllm."+k.Value, 1, MaxStartupTimeoutS)
}

// checkStartupFits raises a step timeout that the server's start-up wait
// alone would use up, and says so: recipes written for perf-eval set long
// waits in steps of the default length, and a job killed before it
// measures anything helps nobody. Only a wait that no step can hold is an
// error.
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
	if startup+startupMargin > maxStepTimeout*time.Minute {
		l.d.Errorf(at, "%s: the server's start-up wait (%d s) leaves less than %d min of the longest step (%d min); lower startup_timeout_s",
			what, int(startup/time.Second), int(startupMargin/time.Minute), maxStepTimeout)
		return
	}
	raised := min(int((startup+workAfterStartup+time.Minute-1)/time.Minute), maxStepTimeout)
	source := "the default"
	if r.TimeoutInMinutes > 0 {
		source = "timeout_in_minutes"
	}
	l.d.Warnf(at, "%s: the server's start-up wait (vllm.startup_timeout_s %d s, default %d) does not fit in the step's timeout (%s, %d min) with %d min to spare; the step's timeout is raised to %d min (the wait plus %d min for the work); set timeout_in_minutes to choose",
		what, int(startup/time.Second), DefaultStartupTimeoutS, source, r.StepTimeout(), int(startupMargin/time.Minute), raised, int(workAfterStartup/time.Minute))
	r.TimeoutInMinutes = raised
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
