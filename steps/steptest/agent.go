package steptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/internal/testutil"
)

// AgentBinary returns the path of a real buildkite-agent: $BUILDKITE_AGENT_BIN
// if set, else <module root>/bin/buildkite-agent. When there is none the
// test fails in CI and is skipped elsewhere with a hint to run "make agent".
func AgentBinary(t testing.TB) string {
	t.Helper()
	path := os.Getenv("BUILDKITE_AGENT_BIN")
	if path == "" {
		root, err := testutil.FindModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(root, "bin", "buildkite-agent")
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		testutil.Missing(t, "no buildkite-agent at %s: run `make agent` or set BUILDKITE_AGENT_BIN", path)
	case err != nil:
		t.Fatalf("finding buildkite-agent: %v", err)
	case info.IsDir() || info.Mode()&0o111 == 0:
		t.Fatalf("buildkite-agent at %s is not an executable file", path)
	}
	return path
}

// agentTimeout only stops a hung agent; a dry run takes well under a second.
const agentTimeout = 2 * time.Minute

// DryRun runs `buildkite-agent pipeline upload --dry-run --format json` on
// pipelineJSON and returns the pipeline the agent would upload, decoded.
//
// The agent runs in an empty temporary directory with only dummy
// BUILDKITE_AGENT_ACCESS_TOKEN, BUILDKITE_JOB_ID and BUILDKITE_BUILD_ID in
// its environment, so interpolation sees no variable of the test's own, and
// with --reject-parse-warnings, so a step the agent cannot classify fails
// the test instead of being passed on as unknown.
func DryRun(t testing.TB, agentBin string, pipelineJSON []byte) map[string]any {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "pipeline.json")
	if err := os.WriteFile(file, pipelineJSON, 0o644); err != nil {
		t.Fatalf("writing pipeline for the agent: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentBin, "pipeline", "upload",
		"--dry-run", "--format", "json", "--reject-parse-warnings", "--no-color", file)
	cmd.Dir = dir
	cmd.Env = []string{
		// The token is longer than the agent's redaction minimum, which
		// keeps a warning about it out of the log.
		"BUILDKITE_AGENT_ACCESS_TOKEN=steptest-dummy-token",
		"BUILDKITE_JOB_ID=steptest-job",
		"BUILDKITE_BUILD_ID=steptest-build",
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("buildkite-agent pipeline upload --dry-run: %v\nstderr:\n%s\npipeline:\n%s", err, stderr.Bytes(), pipelineJSON)
	}

	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("decoding buildkite-agent dry-run output: %v\nstdout:\n%s", err, stdout.Bytes())
	}
	return out
}

// AssertUnchangedByAgent fails the test unless the agent's dry run of
// pipelineJSON means the same as pipelineJSON itself (see Normalize). It
// holds for JSON from steps.MarshalForUpload, and for steps.Marshal output
// without "$".
func AssertUnchangedByAgent(t testing.TB, agentBin string, pipelineJSON []byte) {
	t.Helper()
	AssertAgentReads(t, agentBin, pipelineJSON, pipelineJSON)
}

// AssertAgentReads fails the test unless the agent's dry run of uploadJSON
// means the same as wantJSON, e.g. the steps.MarshalForUpload form of a
// pipeline read back as its steps.Marshal form.
func AssertAgentReads(t testing.TB, agentBin string, uploadJSON, wantJSON []byte) {
	t.Helper()
	got := DryRun(t, agentBin, uploadJSON)
	want := decode(t, wantJSON)
	if diff := cmp.Diff(Normalize(got), Normalize(want)); diff != "" {
		t.Errorf("buildkite-agent dry run changed the pipeline; diff (-agent +want):\n%s", diff)
	}
}

func decode(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding pipeline JSON: %v", err)
	}
	return v
}
