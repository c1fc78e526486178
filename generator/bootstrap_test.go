package main

import (
	"os"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/steps/steptest"
)

// The bootstrap pipeline is uploaded by Buildkite itself; it must be one
// the real agent accepts, and it must build the runner before the recipe
// steps that download it are uploaded. Nothing on that path waits for
// the tests: the upload step depends on no other step.
func TestBootstrapPipelineIsValid(t *testing.T) {
	t.Parallel()
	agent := steptest.AgentBinary(t)
	src, err := os.ReadFile("../.buildkite/pipeline.yml")
	if err != nil {
		t.Fatal(err)
	}
	out := steptest.DryRun(t, agent, src)
	stepsList, _ := out["steps"].([]any)
	byKey := map[string]map[string]any{}
	for _, s := range stepsList {
		if m, ok := s.(map[string]any); ok {
			if k, ok := m["key"].(string); ok {
				byKey[k] = m
			}
		}
	}
	boot, ok := byKey[contract.BootstrapStepKey]
	if !ok {
		t.Fatalf("no step with key %q (recipe steps download the runner from it): %v", contract.BootstrapStepKey, out)
	}
	cmd, _ := boot["command"].(string)
	order := []string{"make generator runner", "buildkite-agent artifact upload " + contract.RunnerArtifact, "bin/generator ", "--out-dir pipeline", "ls pipeline/pipeline-*.json | xargs -n 1 buildkite-agent pipeline upload"}
	last := -1
	for _, want := range order {
		i := strings.Index(cmd, want)
		if i < 0 || i < last {
			t.Errorf("bootstrap command must run %q after the steps before it; command:\n%s", want, cmd)
		}
		last = i
	}
	if deps, ok := boot["depends_on"]; ok {
		t.Errorf("the bootstrap step depends on %v; the GPU steps' upload must wait for nothing", deps)
	}
	if test, ok := byKey["test"]; !ok || test["command"] != "make test" {
		t.Errorf("no step with key test running make test beside the bootstrap: %v", test)
	}
	if strings.Contains(string(src), "$") {
		t.Errorf("bootstrap pipeline uses $, which the agent interpolates at upload")
	}
}
