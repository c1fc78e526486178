package childenv_test

import (
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/workloads"
)

// A build argument lint accepts is one the runner passes to docker build:
// every token the runner gives no docker process is refused by lint, with
// its line, rather than failing the job at its build phase.
func TestBuildArgsLintAcceptsReachDocker(t *testing.T) {
	t.Parallel()
	profiles, err := agents.Default()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"BUILDKITE_API_TOKEN", "BENCHKITE_INGEST_TOKEN", "BENCHKITE_API_TOKEN", "BUILDKITE_AGENT_ACCESS_TOKEN",
		"BUILDKITE_BUILD_NUMBER", "BENCHKITE_X", "HF_TOKEN", "GIT_TOKEN", "MAX_JOBS", "AWS_SECRET_ACCESS_KEY"}
	for _, name := range names {
		src := "name: b\ngpu: H200\nnum_gpus: 1\nvllm_bench:\n  configs: [{name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}]\n" +
			"vllm:\n  model: o/m\n  image: v:t\n  build: {dockerfile: D, args: {" + name + ": null}}\n"
		_, ps := workloads.Parse("r.yaml", []byte(src), profiles)
		lintOK := ps.Errors() == nil
		_, runErr := childenv.Build(childenv.Docker, childenv.Options{Runner: []childenv.Var{{Name: name, Value: "v"}}})
		if lintOK && runErr != nil {
			t.Errorf("build arg %s: lint accepts it, the runner refuses it: %v", name, runErr)
		}
		t.Logf("%s: lint %v, runner %v", name, ps.Errors(), runErr)
	}
}
