package workloads

import (
	"time"

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
