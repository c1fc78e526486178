package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A PR build must select the same recipes whether the paths it is given
// are relative to the working directory or absolute.
func TestPRSelectionWithAbsolutePaths(t *testing.T) {
	dir := prRepo(t, func(t *testing.T, dir string) {
		appendFile(t, filepath.Join(dir, "workloads/kimi_k2_5_mi300x.yaml"), "\n# touched\n")
	})
	env := map[string]string{"BUILDKITE_PULL_REQUEST": "7", "BUILDKITE_PULL_REQUEST_BASE_BRANCH": "main"}
	// git paths come relative to --repo "."; the recipe paths absolute.
	t.Chdir(dir)
	res := runGenerator(t, env,
		"--workloads", filepath.Join(dir, "workloads"), "--agents", filepath.Join(dir, "agents", "profiles.yaml"))
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	var p struct {
		Steps []struct {
			Key string `json:"key"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &p); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range p.Steps {
		keys = append(keys, s.Key)
	}
	if got := strings.Join(keys, " "); got != "history recipe:kimi_k2_5-mi300x report" {
		t.Errorf("steps = %q, want the history, the touched recipe and the report", got)
	}
}

func TestEmptyRecipeDirIsAnError(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"lint", "pipeline"} {
		res := runGenerator(t, nil, cmd, "--workloads", t.TempDir())
		if res.code != 1 || res.stdout != "" || !strings.Contains(res.stderr, "no recipes (*.yaml) in") {
			t.Errorf("%s on an empty dir: exit %d, stdout %q, stderr %q; want exit 1, no stdout, a clear error", cmd, res.code, res.stdout, res.stderr)
		}
	}
}
