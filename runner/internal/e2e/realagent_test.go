package e2e

// The real buildkite-agent against a loopback stand-in of its agent API
// (fakes/agentapi): what the runner publishes, and what the bootstrap
// step's pipeline upload sends, as Buildkite would receive them.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/agentapi"
	"github.com/benchkite/benchkite/steps/steptest"
)

// realAgentPath returns a PATH entry whose buildkite-agent is the real one.
func realAgentPath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(steptest.AgentBinary(t), filepath.Join(dir, "buildkite-agent")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestE2ERealAgentPublishes(t *testing.T) {
	t.Parallel()
	const name = "e2e-real-agent"
	e := newE2E(t, name, tinyRecipe(name, 1))
	api := agentapi.Start(agentapi.Config{Token: e.env["BUILDKITE_AGENT_ACCESS_TOKEN"], JobID: e.env["BUILDKITE_JOB_ID"]})
	t.Cleanup(api.Close)
	e.setenv("PATH", realAgentPath(t)+string(os.PathListSeparator)+e.env["PATH"], "BUILDKITE_AGENT_ENDPOINT", api.Endpoint())

	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 0)
	if calls := e.agentCalls(); len(calls) != 0 {
		t.Errorf("the stand-in agent CLI ran %q; the real agent should have", agentCommands(calls))
	}
	if r := api.Rejected(); len(r) != 0 {
		t.Errorf("the agent API refused:\n%s", strings.Join(r, "\n"))
	}

	// Every result file, byte for byte, under the path the job's working
	// directory gives it, and finished.
	want := map[string]string{}
	for _, rel := range listFiles(t, e.results()) {
		data, err := os.ReadFile(e.results(rel))
		if err != nil {
			t.Fatal(err)
		}
		want["results/"+name+"/"+rel] = string(data)
	}
	got := map[string]string{}
	for _, a := range api.Artifacts() {
		if a.State != "finished" {
			t.Errorf("artifact %s is %s, not finished", a.Path, a.State)
		}
		got[a.Path] = string(a.Content)
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("artifacts Buildkite received diff (-got +want):\n%s", diff)
	}

	note, ok := api.Annotation(name)
	body, err := os.ReadFile(e.results("annotation.md"))
	if err != nil {
		t.Fatal(err)
	}
	wantNote := agentapi.Annotation{Context: name, Style: "success", Priority: 3, Scope: "build", Body: string(body)}
	if diff := cmp.Diff(note, wantNote); !ok || diff != "" {
		t.Errorf("annotation diff (-got +want):\n%s", diff)
	}
	if !strings.Contains(note.Body, "### ✅ `"+name+"`: pass") {
		t.Errorf("annotation body lacks the verdict:\n%s", note.Body)
	}
}

// TestBootstrapPipelineUploadRealAgent runs the bootstrap step's upload
// line, read from .buildkite/pipeline.yml, with the real agent over the
// generator's output for the test recipes: Buildkite receives each file's
// pipeline as the agent's own dry run prints it, once.
func TestBootstrapPipelineUploadRealAgent(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	root := testutil.ModuleRoot(t)
	line := bootstrapLine(t, filepath.Join(root, ".buildkite", "pipeline.yml"), "pipeline upload")

	dir := t.TempDir()
	if err := copyTree(filepath.Join("testdata", "pipeline", "workloads"), filepath.Join(dir, "workloads")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	gen := filepath.Join(dir, "generator")
	build := exec.CommandContext(ctx, "go", "build", "-o", gen, "./generator")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the generator: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, gen, "--workloads", "workloads", "--agents", filepath.Join(root, "agents", "profiles.yaml"), "--no-resolve", "--out-dir", "pipeline")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "BUILDKITE_SOURCE=schedule"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generator: %v\n%s", err, out)
	}
	files, err := filepath.Glob(filepath.Join(dir, "pipeline", "pipeline-*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pipeline files written: %v", err)
	}
	sort.Strings(files)

	const token, job = "bootstrap-agent-token-0123456789", "0190b1e4-0000-4000-8000-0000000000b0"
	api := agentapi.Start(agentapi.Config{Token: token, JobID: job})
	t.Cleanup(api.Close)
	sh := exec.CommandContext(ctx, "/bin/bash", "-e", "-c", line)
	sh.Dir = dir
	sh.Env = []string{
		"PATH=" + realAgentPath(t) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + dir,
		"CI=true", "BUILDKITE=true",
		"BUILDKITE_AGENT_ACCESS_TOKEN=" + token,
		"BUILDKITE_AGENT_ENDPOINT=" + api.Endpoint(),
		"BUILDKITE_JOB_ID=" + job,
		"BUILDKITE_BUILD_ID=0190b1e4-1111-4000-8000-0000000000b1",
		"BUILDKITE_BRANCH=main", "BUILDKITE_SOURCE=schedule",
	}
	var out bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &out
	sh.WaitDelay = 5 * time.Second
	if err := sh.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out.String())
	}
	if r := api.Rejected(); len(r) != 0 {
		t.Errorf("the agent API refused:\n%s", strings.Join(r, "\n"))
	}
	got := api.Pipelines()
	if len(got) != len(files) {
		t.Fatalf("Buildkite received %d pipelines for %d files", len(got), len(files))
	}
	agentBin := steptest.AgentBinary(t)
	for i, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := steptest.DryRun(t, agentBin, src)
		var have map[string]any
		if err := json.Unmarshal(got[i].Pipeline, &have); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(have, want); diff != "" {
			t.Errorf("%s as received differs from the agent's dry run (-got +want):\n%s", filepath.Base(f), diff)
		}
		if got[i].Replace {
			t.Errorf("%s was uploaded with replace", filepath.Base(f))
		}
	}
}

// bootstrapLine returns the bootstrap step's command line holding want.
func bootstrapLine(t *testing.T, path, want string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Steps []struct {
			Key     string `yaml:"key"`
			Command any    `yaml:"command"` // a string or a list
		} `yaml:"steps"`
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, s := range p.Steps {
		if s.Key != contract.BootstrapStepKey {
			continue
		}
		lines, _ := s.Command.([]any)
		for _, c := range lines {
			if c, ok := c.(string); ok && strings.Contains(c, want) {
				return c
			}
		}
	}
	t.Fatalf("%s: the bootstrap step has no command with %q", path, want)
	return ""
}
