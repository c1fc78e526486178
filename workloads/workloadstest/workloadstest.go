// Package workloadstest loads recipes for the tests of the packages that
// use them.
package workloadstest

import (
	"os"
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/workloads"
)

// Resolve loads a recipe file the way the runner does, with the built-in
// GPU profiles and the given build environment.
func Resolve(t testing.TB, path string, env map[string]string) *workloads.Resolved {
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
	res, err := workloads.Resolve(r, profiles, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("workloads.Resolve(%s) error = %v", path, err)
	}
	return res
}
