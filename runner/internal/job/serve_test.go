package job

import (
	"slices"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/workloads"
	"github.com/benchkite/benchkite/workloads/workloadstest"
)

// A secret in the recipe's env reaches the container by name; its value
// is in docker's environment, never on the logged command line.
func TestServeSpecsDockerSecretsByName(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, dockerRecipe, nil)
	res.Env = append(res.Env, workloads.EnvVar{Name: "MY_API_KEY", Value: "sk-live-123"}, workloads.EnvVar{Name: "VLLM_LOGGING_LEVEL", Value: "DEBUG"})
	specs := serveSpecs(res, Config{Port: 8000}, mapGetenv(map[string]string{"BUILDKITE_JOB_ID": "j"}), []string{"PATH=/bin"})
	run := specs[0]
	argv := strings.Join(run.Argv, " ")
	if strings.Contains(argv, "sk-live-123") || !strings.Contains(argv, "-e MY_API_KEY ") {
		t.Errorf("docker run argv = %q, want -e MY_API_KEY without its value", argv)
	}
	if !strings.Contains(argv, "-e VLLM_LOGGING_LEVEL=DEBUG") {
		t.Errorf("docker run argv = %q, want the plain variable with its value", argv)
	}
	if !slices.Contains(run.Env, "MY_API_KEY=sk-live-123") {
		t.Errorf("docker run env = %q, want the secret's value for docker to copy", run.Env)
	}
	if slices.Contains(specs[1].Env, "MY_API_KEY=sk-live-123") {
		t.Errorf("docker logs env = %q, want no secret: it does not need one", specs[1].Env)
	}
}
