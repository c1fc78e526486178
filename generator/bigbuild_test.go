package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/steps"
	"github.com/benchkite/benchkite/steps/steptest"
)

// bigCatalog writes n small nightly recipes to a new directory.
func bigCatalog(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("model%04d-h200", i)
		recipe := fmt.Sprintf(`name: %s
gpu: H200
num_gpus: 1
nightly: true
vllm:
  model: org/model-%04d
vllm_bench:
  configs:
    - name: short
      backend: openai
      dataset: random
      input_len: 128
      output_len: 16
      num_prompts: 8
      max_concurrency: 4
`, name, i)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(recipe), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A night of 2,000 recipes holds more jobs than one upload accepts: the
// generator writes it as numbered uploads, each of which the real agent
// accepts, with every key once across them and the report step in the
// last, waiting for every recipe step.
func TestBigBuildIsUploadedInParts(t *testing.T) {
	t.Parallel()
	agent := steptest.AgentBinary(t)
	const n = 2000
	dir := bigCatalog(t, n)
	out := filepath.Join(t.TempDir(), "pipeline")
	args := []string{"--workloads", dir, "--agents", "../agents/profiles.yaml", "--out-dir", out}
	var stdout, stderr bytes.Buffer
	env := mapEnv(map[string]string{"BUILDKITE_SOURCE": "schedule"})
	if code := run(context.Background(), args, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, env); code != 0 {
		t.Fatalf("generator %v exited %d\nstderr:\n%s", args, code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("with --out-dir the generator printed %d bytes on stdout", stdout.Len())
	}
	files, err := filepath.Glob(filepath.Join(out, "pipeline-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("%d recipes plus history and report in %d uploads, want at least 5: %v", n, len(files), files)
	}
	seen := map[string]string{}
	recipeSteps := 0
	var report map[string]any
	for i, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc := steptest.DryRun(t, agent, b)
		list, _ := doc["steps"].([]any)
		if len(list) == 0 || len(list) > steps.MaxJobsPerUpload {
			t.Errorf("%s: %d steps, want 1..%d", f, len(list), steps.MaxJobsPerUpload)
		}
		for _, s := range list {
			m, _ := s.(map[string]any)
			key, _ := m["key"].(string)
			if prev, ok := seen[key]; ok {
				t.Errorf("key %q in %s and %s", key, prev, f)
			}
			seen[key] = f
			switch {
			case key == contract.ReportStepKey:
				if i != len(files)-1 {
					t.Errorf("report step in upload %d of %d, want the last", i+1, len(files))
				}
				report = m
			case strings.HasPrefix(key, contract.StepKey("model")):
				recipeSteps++
			}
		}
	}
	if recipeSteps != n {
		t.Errorf("%d recipe steps across the uploads, want %d", recipeSteps, n)
	}
	if report == nil {
		t.Fatal("no report step in any upload")
	}
	deps, _ := report["depends_on"].([]any)
	if len(deps) != n {
		t.Errorf("report step depends on %d steps, want every recipe step (%d)", len(deps), n)
	}
}

// Without --out-dir a build too big for one upload is an error that says
// what to do, and nothing is printed.
func TestBigBuildWithoutOutDirFails(t *testing.T) {
	t.Parallel()
	dir := bigCatalog(t, 600)
	args := []string{"--workloads", dir, "--agents", "../agents/profiles.yaml"}
	var stdout, stderr bytes.Buffer
	env := mapEnv(map[string]string{"BUILDKITE_SOURCE": "schedule"})
	if code := run(context.Background(), args, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, env); code == 0 {
		t.Fatalf("generator %v exited 0 for 600 recipes without --out-dir", args)
	}
	if stdout.Len() != 0 {
		t.Errorf("a failed run printed %d bytes on stdout", stdout.Len())
	}
	if !strings.Contains(stderr.String(), "--out-dir") {
		t.Errorf("stderr does not say to use --out-dir:\n%s", stderr.String())
	}
}

// A build that fits in one upload writes one file, byte for byte what
// stdout would have held; a directory left with files is refused.
func TestOutDirOneUpload(t *testing.T) {
	t.Parallel()
	dir := bigCatalog(t, 3)
	env := mapEnv(map[string]string{"BUILDKITE_SOURCE": "schedule"})
	base := []string{"--workloads", dir, "--agents", "../agents/profiles.yaml"}
	var printed, stderr bytes.Buffer
	if code := run(context.Background(), base, cliutil.Streams{Stdout: &printed, Stderr: &stderr}, env); code != 0 {
		t.Fatalf("generator exited %d: %s", code, stderr.String())
	}
	out := filepath.Join(t.TempDir(), "p")
	var stdout bytes.Buffer
	if code := run(context.Background(), append(base, "--out-dir", out), cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, env); code != 0 {
		t.Fatalf("generator --out-dir exited %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(filepath.Join(out, "pipeline-001.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, printed.Bytes()) {
		t.Errorf("pipeline-001.json differs from the printed pipeline")
	}
	if extra, _ := filepath.Glob(filepath.Join(out, "*")); len(extra) != 1 {
		t.Errorf("out dir holds %v, want only pipeline-001.json", extra)
	}
	stderr.Reset()
	if code := run(context.Background(), append(base, "--out-dir", out), cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, env); code == 0 {
		t.Errorf("generator --out-dir into a directory with files exited 0")
	}
	var doc map[string]any
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Errorf("pipeline-001.json: %v", err)
	}
}
