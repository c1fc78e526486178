package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
)

// Without --workloads and --agents every subcommand reads the checkout it
// runs in, as the bootstrap step runs it, and says so: a recipe added,
// broken or removed there is what lint and the pipeline see, never a copy
// built into the binary.
func TestDefaultsReadTheCheckout(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "../testdata/workloads", filepath.Join(dir, "workloads"), ".yaml")
	copyTree(t, "../agents", filepath.Join(dir, "agents"), ".yaml")
	t.Chdir(dir)
	checkout := map[string]string{"BENCHKITE_AGENTS": ""} // not the test's default
	sched := map[string]string{"BENCHKITE_AGENTS": "", "BUILDKITE_SOURCE": "schedule"}
	line := "generator: reading recipes from workloads and profiles from agents/profiles.yaml in " + dir + "\n"

	if got := runGenerator(t, checkout, "lint"); got.code != 0 || got.stdout != "" || got.stderr != line {
		t.Fatalf("lint of a clean checkout = %+v, want exit 0 and stderr %q", got, line)
	}

	testutil.WriteFile(t, filepath.Join(dir, "workloads", "broken_h200.yaml"), "name: broken-h200\ngpu: H200\nnum_gpus: eight\n")
	got := runGenerator(t, checkout, "lint")
	if got.code != 1 || !strings.HasPrefix(got.stderr, line) || !strings.Contains(got.stdout, "workloads/broken_h200.yaml:3:11:") {
		t.Errorf("lint with a broken recipe = %+v, want exit 1 naming workloads/broken_h200.yaml:3:11", got)
	}
	nightly := runGenerator(t, sched)
	if nightly.code != 0 || !strings.Contains(nightly.stdout, `"invalid:workloads-broken_h200.yaml"`) {
		t.Errorf("pipeline with a broken recipe = exit %d, want 0 with its failing step; stderr:\n%s", nightly.code, nightly.stderr)
	}

	src := readFile(t, filepath.Join(dir, "workloads", "gpt_oss_120b_h200.yaml"))
	if err := os.Remove(filepath.Join(dir, "workloads", "broken_h200.yaml")); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(dir, "workloads", "new_h200.yaml"), strings.Replace(src, "name: gpt_oss_120b-h200", "name: new-h200", 1))
	if got := runGenerator(t, checkout, "explain", "new-h200"); got.code != 0 || !strings.Contains(got.stdout, "new-h200 (workloads/new_h200.yaml)") {
		t.Errorf("explain of a recipe added to the checkout = %+v", got)
	}

	// The profiles too: a broken profile file in the checkout is an error
	// naming it.
	testutil.WriteFile(t, filepath.Join(dir, "agents", "profiles.yaml"), "H200: [\n")
	if got := runGenerator(t, checkout, "lint"); got.code == 0 || !strings.Contains(got.stderr, "agents/profiles.yaml:") {
		t.Errorf("lint with a broken agents/profiles.yaml = %+v, want an error naming it", got)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
