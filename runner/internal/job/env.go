package job

import (
	"strconv"

	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/workloads"
)

// envReadyTimeout is vLLM's own limit on engine start-up, 600 s by
// default: a large model dies there whatever the runner's health timeout
// is. The runner sets it to its health timeout unless the recipe's (or the
// profile's) env sets it: that value is the recipe's choice.
const envReadyTimeout = workloads.EngineReadyTimeoutEnv

// env is the complete environment of a child of role r: what the role
// takes of the job's environment, the recipe's env for the server, and
// the runner's own values on top. No Buildkite or ingest token reaches a
// child but buildkite-agent, which gets only the agent's own.
func (j *Job) env(r childenv.Role, runner ...childenv.Var) ([]string, error) {
	o := childenv.Options{Environ: j.environ, Runner: runner, Deny: j.deny, Pass: j.cfg.PassEnv}
	if r == childenv.Server {
		o.Recipe = j.recipeEnv()
	}
	return childenv.Build(r, o)
}

// recipeEnv is the profile's and the recipe's env, merged.
func (j *Job) recipeEnv() []childenv.Var {
	out := make([]childenv.Var, 0, len(j.res.Env))
	for _, e := range j.res.Env {
		out = append(out, childenv.Var{Name: e.Name, Value: e.Value})
	}
	return out
}

// readyTimeoutVars gives vLLM the runner's health timeout, in whole
// seconds, rounded up, when the server's env does not set it already.
func (j *Job) readyTimeoutVars() []childenv.Var {
	for _, e := range j.res.Env {
		if e.Name == envReadyTimeout {
			return nil
		}
	}
	secs := int((j.cfg.HealthTimeout + 999_999_999) / 1_000_000_000)
	return []childenv.Var{{Name: envReadyTimeout, Value: strconv.Itoa(secs)}}
}
