package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/steps/steptest"
)

// scenario is one build the generator is asked about.
type scenario struct {
	name string
	args []string
	env  map[string]string
	// pr, when set, builds a git repo whose PR branch makes this change,
	// and runs the generator inside it as the bootstrap step would.
	pr func(t *testing.T, dir string)
}

func scenarios() []scenario {
	shipped := []string{"--workloads", "../testdata/workloads", "--agents", "../agents/profiles.yaml"}
	inRepo := []string{"--workloads", "workloads", "--agents", "agents/profiles.yaml"}
	prEnv := map[string]string{"BUILDKITE_SOURCE": "webhook", "BUILDKITE_PULL_REQUEST": "42", "BUILDKITE_PULL_REQUEST_BASE_BRANCH": "main"}
	return []scenario{
		{name: "nightly", args: shipped, env: map[string]string{"BUILDKITE_SOURCE": "schedule"}},
		{name: "workloads-list", args: shipped, env: map[string]string{"WORKLOADS": "gpt_oss_120b-h200, kimi_k2_5_mi300x.yaml\n../testdata/workloads/gpt_oss_120b_b200.yaml", "VLLM_COMMIT": "0123456789abcdef0123456789abcdef01234567"}},
		{name: "seed-recipe-alone", args: shipped, env: map[string]string{"WORKLOADS": "minimax_m3-mi355x", "MI355X_QUEUE": "mi355x-canary"}},
		{name: "blocked-recipe-asked-for", args: shipped, env: map[string]string{"WORKLOADS": "minimax_m3-nospec-mi355x", "VLLM_IMAGE": "vllm/vllm-openai:nightly", "BENCH_ONLY": "1"}},
		{name: "invalid-recipe-in-nightly", args: []string{"--workloads", "testdata/invalid/workloads", "--agents", "../agents/profiles.yaml"}, env: map[string]string{"BUILDKITE_SOURCE": "schedule", "BUILDKITE_AGENT_META_DATA_QUEUE": "cpu"}},
		{name: "pr-one-recipe", args: inRepo, env: prEnv, pr: func(t *testing.T, dir string) {
			appendFile(t, filepath.Join(dir, "workloads/kimi_k2_5_mi300x.yaml"), "\n# touched\n")
		}},
		{name: "pr-mi355x-profile", args: inRepo, env: prEnv, pr: func(t *testing.T, dir string) {
			replaceInFile(t, filepath.Join(dir, "agents/profiles.yaml"), "queue: mi355_perf_eval\n", "queue: mi355x-new\n")
		}},
		{name: "pr-code-only", args: inRepo, env: prEnv, pr: func(t *testing.T, dir string) {
			testutil.WriteFile(t, filepath.Join(dir, "runner/main.go"), "package main\n")
		}},
	}
}

// generate runs the generator as main would and returns its stdout.
func generate(t *testing.T, sc scenario) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), sc.args, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapEnv(sc.env))
	if code != 0 {
		t.Fatalf("generator %v exited %d\nstderr:\n%s", sc.args, code, stderr.String())
	}
	return stdout.Bytes()
}

// mapEnv is an environment of m. Tests have no network, so images are not
// resolved unless m sets BENCHKITE_NO_RESOLVE itself (the pinning tests
// set it to 0 and point the recipes at a loopback registry). The profiles
// are the repository's unless m sets BENCHKITE_AGENTS (even to ""): the
// tests run in this package's folder, not at the checkout's root.
func mapEnv(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		switch k {
		case "BENCHKITE_NO_RESOLVE":
			return "1"
		case "BENCHKITE_AGENTS":
			return "../agents/profiles.yaml"
		}
		return ""
	}
}

func TestPipelineGolden(t *testing.T) {
	// Not parallel: PR scenarios run inside a git repo, as the bootstrap
	// step does, which changes the working directory.
	agent := steptest.AgentBinary(t)
	outputs := map[string][]byte{}
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			if sc.pr != nil {
				dir := prRepo(t, sc.pr)
				t.Chdir(dir)
			}
			outputs[sc.name] = generate(t, sc)
		})
	}
	for _, sc := range scenarios() {
		got, ok := outputs[sc.name]
		if !ok {
			continue
		}
		t.Run(sc.name+"/checks", func(t *testing.T) {
			checkGolden(t, filepath.Join("testdata", "golden", sc.name+".json"), got)
			steptest.AssertGoPipelineParses(t, got)
			steptest.AssertSchemaValid(t, got)
			// The agent interpolates at upload; what it reads back must be
			// our pipeline with "$$" read as "$", nothing else.
			steptest.AssertAgentReads(t, agent, got, unescapeDollars(t, got))
		})
	}
}

func checkGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	testutil.Golden(t, file, got)
}

// unescapeDollars reads "$$" as "$" in every string, as the agent's
// interpolation does, to state what the agent must read back.
func unescapeDollars(t *testing.T, doc []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			return strings.ReplaceAll(v, "$$", "$")
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case map[string]any:
			out := map[string]any{}
			for k, e := range v {
				out[strings.ReplaceAll(k, "$$", "$")] = walk(e)
			}
			return out
		}
		return v
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// prRepo makes a repository like a PR build's checkout: origin/main holds
// the shipped recipes and profiles, HEAD is a PR branch with change applied.
func prRepo(t *testing.T, change func(t *testing.T, dir string)) string {
	t.Helper()
	root := t.TempDir()
	origin := filepath.Join(root, "origin.git")
	dir := filepath.Join(root, "checkout")
	gitRun(t, root, "init", "--quiet", "--bare", "-b", "main", origin)
	gitRun(t, root, "init", "--quiet", "-b", "main", dir)
	copyTree(t, "../testdata/workloads", filepath.Join(dir, "workloads"), ".yaml")
	copyTree(t, "../agents", filepath.Join(dir, "agents"), ".yaml")
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "--quiet", "-m", "base")
	gitRun(t, dir, "remote", "add", "origin", origin)
	gitRun(t, dir, "push", "--quiet", "origin", "main")
	gitRun(t, dir, "checkout", "--quiet", "-b", "pr")
	change(t, dir)
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "--quiet", "-m", "change")
	return dir
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=benchkite", "-c", "user.email=test@benchkite.invalid", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func copyTree(t *testing.T, from, to, suffix string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), suffix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		testutil.WriteFile(t, filepath.Join(to, e.Name()), string(b))
	}
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, path, string(b)+content)
}

func replaceInFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	testutil.WriteFile(t, path, strings.Replace(string(b), old, new, 1))
}
