package job

import (
	"cmp"
	"context"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/buildkite"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// buildkite is the job's door to Buildkite: the agent, run by the job's
// runner with the environment of its role, and the API.
func (j *Job) buildkite() (buildkite.Door, error) {
	env, err := j.env(childenv.Agent)
	if err != nil {
		return buildkite.Door{}, err
	}
	a := j.agentDep.WithEnv(env)
	if a.Procs == nil {
		a.Procs = j.procs
	}
	return buildkite.Door{Agent: a, Getenv: j.getenv}, nil
}

// historyAgent is the agent as the history step's files need it, with
// the environment of its role when it is first asked.
type historyAgent struct{ j *Job }

func (a historyAgent) Download(ctx context.Context, query, dest, step string) error {
	bk, err := a.j.buildkite()
	if err != nil {
		return err
	}
	return bk.Agent.Download(ctx, query, dest, step)
}

func (a historyAgent) StepState(ctx context.Context, step string) (string, error) {
	bk, err := a.j.buildkite()
	if err != nil {
		return "", err
	}
	return bk.Agent.StepState(ctx, step)
}

func buildkiteInfo(getenv func(string) string) *summary.BuildkiteInfo {
	if getenv("BUILDKITE_JOB_ID") == "" && getenv("BUILDKITE_BUILD_ID") == "" && getenv("BUILDKITE") != "true" {
		return nil
	}
	return &summary.BuildkiteInfo{
		BuildID:        getenv("BUILDKITE_BUILD_ID"),
		BuildNumber:    getenv("BUILDKITE_BUILD_NUMBER"),
		BuildURL:       getenv("BUILDKITE_BUILD_URL"),
		JobID:          getenv("BUILDKITE_JOB_ID"),
		StepKey:        getenv("BUILDKITE_STEP_KEY"),
		Branch:         getenv("BUILDKITE_BRANCH"),
		BaselineBranch: baselineBranch(getenv),
		Commit:         getenv("BUILDKITE_COMMIT"),
		Source:         getenv("BUILDKITE_SOURCE"),
		PullRequest:    getenv("BUILDKITE_PULL_REQUEST"),
	}
}

// baselineBranch is where the history step finds the nights: the branch
// `runner history --baseline-branch` defaults to.
func baselineBranch(getenv func(string) string) string {
	return cmp.Or(strings.TrimSpace(getenv("BENCHKITE_BASELINE_BRANCH")), strings.TrimSpace(getenv("BUILDKITE_PIPELINE_DEFAULT_BRANCH")))
}
