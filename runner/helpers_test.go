package main

import (
	"path/filepath"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
)

// Shipped recipes the tests run against, relative to this package.
const (
	seedRecipe   = "../testdata/workloads/minimax_m3_mi355x.yaml"
	dockerRecipe = "../testdata/workloads/gpt_oss_120b_h200.yaml"
	sweepRecipe  = "testdata/recipes/sweep_mi300x.yaml"
)

// mapGetenv is a getenv over a fixed map; nil reads as an empty env.
// BENCHKITE_AGENTS, unless the map sets it, is the repository's profile
// file: the tests run in this package's folder, not at the checkout's
// root where the runner finds it by default.
func mapGetenv(env map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok || k != "BENCHKITE_AGENTS" {
			return v
		}
		return "../agents/profiles.yaml"
	}
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
