package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Another step's artifact downloads once that step has uploaded it, into
// the destination with its path; before, the agent's own error.
func TestArtifactDownloadAndStepState(t *testing.T) {
	ta := newTestAgent(t)
	root := filepath.Dir(ta.dir)
	ta.env[envDownloads] = filepath.Join(root, "steps")
	ta.env[envStepStates] = filepath.Join(root, "states")
	if err := os.MkdirAll(ta.env[envStepStates], 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ta.env[envStepStates], "history"), []byte("running\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const path = "results/_history/recipes/a-h200.json"

	if code, out, _ := ta.run("", "step", "get", "state", "--step", "history"); code != 0 || out != "running\n" {
		t.Errorf("step get state = %d %q, want running", code, out)
	}
	if code, _, errOut := ta.run("", "artifact", "download", path, ".", "--step", "history"); code != 1 || !strings.Contains(strings.ToLower(errOut), "no artifacts found for downloading") {
		t.Errorf("download before the upload = %d %q, want 1 and the agent's error", code, errOut)
	}
	src := filepath.Join(ta.env[envDownloads], "history", filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte(`{"version":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := ta.run("", "artifact", "download", path, ".", "--step", "history"); code != 0 {
		t.Fatalf("download after the upload = %d %q", code, errOut)
	}
	if got, err := os.ReadFile(filepath.Join(ta.dir, filepath.FromSlash(path))); err != nil || string(got) != `{"version":1}` {
		t.Errorf("downloaded %q, %v", got, err)
	}
	if code, _, _ := ta.run("", "step", "get", "state", "--step", "nope"); code != 1 {
		t.Errorf("step get state of an unknown step = %d, want 1", code)
	}
}
