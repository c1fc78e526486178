package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
)

// 2,000 recipes with the longest names a recipe may have need 168 KiB of
// history lines: more than one environment variable can hold, so a step
// given them there could not even start. With --history-needs they travel
// in a file the history step downloads from the generating step; without
// it the generator says so instead of writing a step that cannot run.
func TestHistoryNeedsTravelInAFile(t *testing.T) {
	const n = 2000
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("%s-%04d-h200", strings.Repeat("m", 80-len("-0000-h200")), i)
		recipe := "name: " + name + "\ngpu: H200\nnum_gpus: 1\nnightly: true\nvllm:\n  model: org/m\nvllm_bench:\n  configs:\n    - {name: short, backend: openai, dataset: random, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}\n"
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(recipe), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	agentsFile, err := filepath.Abs("../agents/profiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	env := mapEnv(map[string]string{"BUILDKITE_SOURCE": "schedule"})
	base := []string{"--workloads", dir, "--agents", agentsFile, "--no-resolve"}

	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), append(base, "--out-dir", "without"), cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, env); code == 0 {
		t.Fatalf("generator without --history-needs exited 0 for %d needs", n)
	}
	if !strings.Contains(stderr.String(), "--history-needs") {
		t.Errorf("stderr does not say to use --history-needs:\n%s", stderr.String())
	}

	stderr.Reset()
	const needsFile = "history-needs.tsv"
	if code := run(context.Background(), append(base, "--out-dir", "pipeline", "--history-needs", needsFile), cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, env); code != 0 {
		t.Fatalf("generator --history-needs exited %d:\n%s", code, stderr.String())
	}
	data, err := os.ReadFile(needsFile)
	if err != nil {
		t.Fatal(err)
	}
	needs, err := contract.ParseNeeds(string(data))
	if err != nil || len(needs) != n {
		t.Fatalf("%s: %d needs, %v; want %d", needsFile, len(needs), err, n)
	}
	t.Logf("%d recipes: %d KiB of history lines", n, len(data)>>10)
	// What the step could not have been given: exec refuses the variable.
	if err := exec.Command("true").Run(); err == nil {
		cmd := exec.Command("true")
		cmd.Env = []string{contract.HistoryEnv + "=" + string(data)}
		if err := cmd.Run(); err == nil {
			t.Errorf("a process started with %d KiB in %s; the file is then not needed", len(data)>>10, contract.HistoryEnv)
		}
	}
	first, err := os.ReadFile(filepath.Join("pipeline", "pipeline-001.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Steps []struct {
			Key      string            `json:"key"`
			Commands []string          `json:"commands"`
			Env      map[string]string `json:"env"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(first, &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range doc.Steps {
		if s.Key != contract.HistoryStepKey {
			continue
		}
		if _, ok := s.Env[contract.HistoryEnv]; ok {
			t.Errorf("the history step still carries %s in its env", contract.HistoryEnv)
		}
		cmds := strings.Join(s.Commands, "\n")
		for _, want := range []string{"buildkite-agent artifact download " + needsFile + " . --step " + contract.BootstrapStepKey, contract.RunnerArtifact + " history --needs-file " + needsFile} {
			if !strings.Contains(cmds, want) {
				t.Errorf("the history step's commands lack %q:\n%s", want, cmds)
			}
		}
		return
	}
	t.Fatal("no history step in the first upload")
}
