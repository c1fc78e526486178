package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/steps/steptest"
)

// perfEvalRecipes are recipes perf-eval runs, unchanged, that an older
// loader refused.
const perfEvalRecipes = "../workloads/testdata/perfeval"

// TestPerfEvalRecipesLintAndPlan: lint passes them with warnings where the
// loader adjusted something, and the pipeline gives each its GPU step with
// the step timeout that fits its start-up wait.
func TestPerfEvalRecipesLintAndPlan(t *testing.T) {
	t.Parallel()
	lint := runGenerator(t, nil, "lint", "--workloads", perfEvalRecipes, "--agents", profilesFlag)
	if lint.code != 0 || lint.stdout != "" {
		t.Fatalf("lint: exit %d, stdout %q, stderr:\n%s", lint.code, lint.stdout, lint.stderr)
	}
	for _, want := range []string{
		"kimi_k2_5_mi300x.yaml:9:22: warning: vllm.startup_timeout_s: the server's start-up wait",
		"the step's timeout is raised to 180 min",
		"kimi_k3_b300.yaml:11:3: warning: vllm.startup_timeout is the older spelling",
	} {
		if !strings.Contains(lint.stderr, want) {
			t.Errorf("lint stderr lacks %q:\n%s", want, lint.stderr)
		}
	}

	got := runGenerator(t, map[string]string{
		"BUILDKITE_BRANCH": "main",
		"WORKLOADS":        "kimi_k2_5-mi300x,upstream-deepseek-r1-0528-MI355X,kimi_k3-b300",
	}, "--workloads", perfEvalRecipes)
	if got.code != 0 {
		t.Fatalf("pipeline: exit %d, stderr:\n%s", got.code, got.stderr)
	}
	var p struct {
		Steps []struct {
			Label   string            `json:"label"`
			Timeout int               `json:"timeout_in_minutes"`
			Agents  map[string]string `json:"agents"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &p); err != nil {
		t.Fatalf("pipeline is not JSON: %v", err)
	}
	type step struct {
		Timeout int
		Queue   string
	}
	steps := map[string]step{}
	for _, s := range p.Steps {
		if q := s.Agents["queue"]; q != "" {
			steps[s.Label] = step{s.Timeout, q}
		}
	}
	want := map[string]step{
		":amd: kimi_k2_5-mi300x":                 {180, "mi300_perf_eval"},
		":amd: upstream-deepseek-r1-0528-MI355X": {120, "mi355_perf_eval"},
		":nvidia: kimi_k3-b300":                  {120, "b300-8"},
	}
	if diff := cmp.Diff(steps, want); diff != "" {
		t.Errorf("GPU steps diff (-got +want):\n%s", diff)
	}
}

// TestExplainRecipeEngineReadyTimeout: a recipe's own
// VLLM_ENGINE_READY_TIMEOUT_S is what explain says vLLM gets.
func TestExplainRecipeEngineReadyTimeout(t *testing.T) {
	t.Parallel()
	got := runGenerator(t, nil, "explain", "--workloads", perfEvalRecipes, "--agents", profilesFlag, "kimi_k2_5-mi300x")
	if got.code != 0 {
		t.Fatalf("explain: exit %d, stderr:\n%s", got.code, got.stderr)
	}
	want := "startup      7200 s (health wait); VLLM_ENGINE_READY_TIMEOUT_S 7200 s, the recipe's env\n"
	if !strings.Contains(got.stdout, want) {
		t.Errorf("explain lacks %q:\n%s", want, got.stdout)
	}
	js := runGenerator(t, nil, "explain", "--json", "--workloads", perfEvalRecipes, "--agents", profilesFlag, "kimi_k2_5-mi300x")
	var ex struct {
		Startup int `json:"startup_timeout_s"`
		Engine  int `json:"engine_ready_timeout_s"`
	}
	if err := json.Unmarshal([]byte(js.stdout), &ex); err != nil || ex.Startup != 7200 || ex.Engine != 7200 {
		t.Errorf("explain --json: startup %d, engine %d, err %v; want 7200, 7200", ex.Startup, ex.Engine, err)
	}
}

// TestPlatformImagePins: VLLM_IMAGE_CUDA pins the CUDA recipes' image
// (their steps carry it, as VLLM_IMAGE and as the pin); recipes of a
// platform the build pins nothing for are skipped steps naming the
// variable, and the report lists them as skipped.
func TestPlatformImagePins(t *testing.T) {
	t.Parallel()
	const cuda = "public.ecr.aws/q9t5s3a7/vllm-release-repo:7ce42a9bb874a3491819807870e3efebde2845bd-x86_64"
	got := runGenerator(t, map[string]string{
		"BUILDKITE_BRANCH": "main",
		"WORKLOADS":        "kimi_k2_5-mi300x,upstream-deepseek-r1-0528-MI355X,kimi_k3-b300",
		"VLLM_IMAGE_CUDA":  cuda,
	}, "--workloads", perfEvalRecipes)
	if got.code != 0 {
		t.Fatalf("pipeline: exit %d, stderr:\n%s", got.code, got.stderr)
	}
	var p struct {
		Steps []struct {
			Key  string            `json:"key"`
			Skip any               `json:"skip"`
			Env  map[string]string `json:"env"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &p); err != nil {
		t.Fatalf("pipeline is not JSON: %v", err)
	}
	type step struct {
		Skip              any
		Image, CUDA, ROCM string
	}
	steps := map[string]step{}
	var report map[string]string
	for _, s := range p.Steps {
		switch {
		case s.Key == "report":
			report = s.Env
		case strings.HasPrefix(s.Key, "recipe:"):
			steps[s.Key] = step{s.Skip, s.Env["VLLM_IMAGE"], s.Env["VLLM_IMAGE_CUDA"], s.Env["VLLM_IMAGE_ROCM"]}
		}
	}
	want := map[string]step{
		"recipe:kimi_k3-b300":                     {Image: cuda, CUDA: cuda},
		"recipe:kimi_k2_5-mi300x":                 {Skip: "no ROCm image: set VLLM_IMAGE_ROCM"},
		"recipe:upstream-deepseek-r1-0528-MI355X": {Skip: "no ROCm image: set VLLM_IMAGE_ROCM"},
	}
	if diff := cmp.Diff(steps, want); diff != "" {
		t.Errorf("recipe steps diff (-got +want):\n%s", diff)
	}
	// The real agent takes the skipped steps as they are.
	uploaded := steptest.DryRun(t, steptest.AgentBinary(t), []byte(got.stdout))
	var skips []string
	for _, st := range uploaded["steps"].([]any) {
		if m, _ := st.(map[string]any); m["skip"] != nil {
			skips = append(skips, m["key"].(string)+": "+m["skip"].(string))
		}
	}
	if diff := cmp.Diff(skips, []string{"recipe:kimi_k2_5-mi300x: no ROCm image: set VLLM_IMAGE_ROCM", "recipe:upstream-deepseek-r1-0528-MI355X: no ROCm image: set VLLM_IMAGE_ROCM"}); diff != "" {
		t.Errorf("skipped steps the agent uploads diff (-got +want):\n%s", diff)
	}
	if report["BENCHKITE_SELECTED"] != "kimi_k3-b300" || !strings.Contains(report["BENCHKITE_SKIPPED"], "kimi_k2_5-mi300x\t") || !strings.Contains(report["BENCHKITE_SKIPPED"], "set VLLM_IMAGE_ROCM") {
		t.Errorf("report env = %v; want only kimi_k3-b300 selected and the ROCm recipes skipped with the variable to set", report)
	}
	for _, w := range []string{"Image of kimi\\_k3-b300 (B300, CUDA): " + strings.ReplaceAll(cuda, "_", "\\_") + ", from VLLM\\_IMAGE\\_CUDA", "Skipped kimi\\_k2\\_5-mi300x: no image for this platform"} {
		if !strings.Contains(got.stderr, w) {
			t.Errorf("notes lack %q:\n%s", w, got.stderr)
		}
	}
}
