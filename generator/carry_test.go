package main

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/steps/steptest"
	"github.com/google/go-cmp/cmp"
)

// okRecipe runs whatever the other files of a test catalog hold.
const okRecipe = `name: ok-h200
gpu: H200
num_gpus: 1
nightly: true
vllm: {model: org/model}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`

// TestRecipeTextCannotSinkThePipeline: text that the agent's upload
// interpolation cannot carry (a backslash before "$") fails its own
// recipe's step; the generator still prints a pipeline, the agent reads
// back exactly what was meant, and the other recipe still runs.
func TestRecipeTextCannotSinkThePipeline(t *testing.T) {
	t.Parallel()
	agent := steptest.AgentBinary(t)
	tests := []struct {
		name  string
		file  string // recipe file name
		src   string
		key   string // the failing step
		print string // what that step must print on stderr, in part
		// skipped, when set, is what the report step must read.
		skipped []contract.Skipped
	}{
		{
			name: "blocked_by with a backslash-dollar",
			file: "blocked.yaml",
			src: `name: blocked
gpu: H200
num_gpus: 1
nightly: true
blocked_by: ['costs \$5 of GPU time']
vllm: {model: org/model}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			skipped: []contract.Skipped{{Name: "blocked", Reason: `blocked by costs \$5 of GPU time`}},
		},
		{
			name:  "file name with a backslash-dollar",
			file:  `we\$ird.yaml`,
			src:   strings.Replace(okRecipe, "ok-h200", "weird", 1),
			key:   "recipe:weird",
			print: `we\$ird.yaml: this recipe's step cannot be uploaded`,
		},
		{
			name: "duplicated serve flag with a backslash-dollar",
			file: "dup.yaml",
			src: `name: dup
gpu: H200
num_gpus: 1
nightly: true
vllm: {model: org/model, serve_args: "'--x\\$y' 1 '--x\\$y' 2"}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			key:   "invalid:" + "DIR",
			print: `vllm.serve_args: --x\$y is given twice`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			testutil.WriteFile(t, filepath.Join(dir, "ok.yaml"), okRecipe)
			testutil.WriteFile(t, filepath.Join(dir, tt.file), tt.src)
			res := runGenerator(t, map[string]string{"BUILDKITE_SOURCE": "schedule"}, "--workloads", dir, "--agents", "../agents/profiles.yaml")
			if res.code != 0 {
				t.Fatalf("generator exited %d, want 0\nstderr:\n%s", res.code, res.stderr)
			}
			got := []byte(res.stdout)
			steptest.AssertSchemaValid(t, got)
			steptest.AssertAgentReads(t, agent, got, unescapeDollars(t, got))
			uploaded := steptest.Normalize(steptest.DryRun(t, agent, got)).(map[string]any)
			byKey := map[string]map[string]any{}
			for _, s := range uploaded["steps"].([]any) {
				m := s.(map[string]any)
				k, _ := m["key"].(string)
				byKey[k] = m
			}
			if _, ok := byKey["recipe:ok-h200"]; !ok {
				t.Errorf("the valid recipe has no step; keys: %v", slices.Collect(maps.Keys(byKey)))
			}
			if tt.skipped != nil {
				env, _ := byKey[contract.ReportStepKey]["env"].(map[string]any)
				raw, _ := env[contract.SkippedEnv].(string)
				if diff := cmp.Diff(contract.ParseSkipped(raw), tt.skipped); diff != "" {
					t.Errorf("skipped list the report reads, diff (-got +want):\n%s", diff)
				}
			}
			if tt.key == "" {
				return
			}
			key := strings.Replace(tt.key, "DIR", "", 1)
			var step map[string]any
			for k, s := range byKey {
				if strings.HasPrefix(k, key) && (key != "invalid:" || strings.HasSuffix(k, "dup.yaml")) {
					step = s
				}
			}
			if step == nil {
				t.Fatalf("no step with key %s; keys: %v", key, slices.Collect(maps.Keys(byKey)))
			}
			code, stderr := runStep(t, step)
			if code == 0 {
				t.Errorf("step %s exited 0, want a failure", key)
			}
			if !strings.Contains(stderr, tt.print) {
				t.Errorf("step %s printed %q, want it to hold %q", key, stderr, tt.print)
			}
		})
	}
}

// runStep runs an uploaded step's command as the agent's bootstrap does,
// bash -c with the step's env, and returns its exit code and stderr.
func runStep(t *testing.T, step map[string]any) (int, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to run the step as an agent would: %v", err)
	}
	command, _ := step["command"].(string)
	work := t.TempDir()
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + work}
	stepEnv, _ := step["env"].(map[string]any)
	for k, v := range stepEnv {
		env = append(env, k+"="+v.(string))
	}
	cmd := exec.Command(bash, "-c", command)
	cmd.Dir = work
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	}
	t.Fatalf("running the step: %v", err)
	return 0, ""
}

// A dangling link or a link out of the folder is an invalid recipe step
// of its own; before, it failed the whole generator.
func TestRecipeLinksAreTheirOwnProblem(t *testing.T) {
	t.Parallel()
	agent := steptest.AgentBinary(t)
	dir := t.TempDir()
	testutil.WriteFile(t, filepath.Join(dir, "ok.yaml"), okRecipe)
	for name, target := range map[string]string{"dangling.yaml": "missing.yaml", "outside.yaml": "/etc/passwd"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	res := runGenerator(t, map[string]string{"BUILDKITE_SOURCE": "schedule"}, "--workloads", dir, "--agents", "../agents/profiles.yaml")
	if res.code != 0 {
		t.Fatalf("generator exited %d, want 0\nstderr:\n%s", res.code, res.stderr)
	}
	if strings.Contains(res.stdout+res.stderr, "root:") {
		t.Errorf("the output quotes /etc/passwd:\n%s", res.stdout+res.stderr)
	}
	got := []byte(res.stdout)
	steptest.AssertAgentReads(t, agent, got, unescapeDollars(t, got))
	var keys []string
	for _, s := range steptest.DryRun(t, agent, got)["steps"].([]any) {
		keys = append(keys, s.(map[string]any)["key"].(string))
	}
	for _, want := range []string{"recipe:ok-h200", "dangling.yaml", "outside.yaml"} {
		found := false
		for _, k := range keys {
			found = found || strings.HasSuffix(k, want)
		}
		if !found {
			t.Errorf("no step ending in %q; keys: %q", want, keys)
		}
	}
}
