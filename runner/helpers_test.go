package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// Shipped recipes the tests run against, relative to this package.
const (
	seedRecipe   = "../workloads/minimax_m3_mi355x.yaml"
	dockerRecipe = "../workloads/gpt_oss_120b_h200.yaml"
	sweepRecipe  = "testdata/recipes/sweep_mi300x.yaml"
)

// resolveRecipe loads a recipe file the way the runner does, with the
// built-in GPU profiles and the given build environment.
func resolveRecipe(t *testing.T, path string, env map[string]string) *workloads.Resolved {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	profiles, err := agents.Default()
	if err != nil {
		t.Fatalf("agents.Default() error = %v", err)
	}
	r, problems := workloads.Parse(path, src, profiles)
	if r == nil {
		t.Fatalf("workloads.Parse(%s) problems:\n%v", path, problems.Errors())
	}
	res, err := workloads.Resolve(r, profiles, agents.MapEnv(env))
	if err != nil {
		t.Fatalf("workloads.Resolve(%s) error = %v", path, err)
	}
	return res
}

// mapGetenv is a getenv over a fixed map; nil reads as an empty env.
func mapGetenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// environOf turns a map into NAME=value pairs, as os.Environ gives them.
func environOf(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// checkGolden compares got with testdata/<name>, or rewrites the file
// with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

func ptr[T any](v T) *T { return &v }

// nightSummary is what a past night uploaded, as the baseline API returns
// it.
func nightSummary(t *testing.T, s summary.Summary) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := summary.Encode(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
