// Package testutil holds what the tests of every package share: the one
// -update flag for golden files, the module root, and the reference corpus.
//
// Regenerate every golden file after an intended change with
//
//	go test ./... -update
//
// and review the diff before committing.
package testutil

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// Updating reports whether the tests run with -update, for golden checks
// that cannot go through Golden (a set of files compared as a whole).
func Updating() bool { return *update }

// Golden compares got with the file at path (relative to the package
// directory), or rewrites the file under -update.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs; run go test -update if the change is intended; diff (-got +want):\n%s", path, cmp.Diff(string(got), string(want)))
	}
}

// ModuleRoot is the nearest directory at or above the working directory
// that holds a go.mod; tests run in their package directory.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	root, err := FindModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// FindModuleRoot is ModuleRoot for code that has no testing.TB at hand.
func FindModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find module root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// InCI reports whether the test runs in CI, where everything the tests
// need must be present.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing fails the test in CI and skips it elsewhere, loudly, so a skip
// is never silent and never hides a gap in CI.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (CI=true, so this is a failure, not a skip)", msg)
	}
	t.Skipf("SKIPPED: %s", msg)
}

// ReferenceEnv names the one variable that says where the reference
// corpus is (perf-eval's recipes and profiles, Buildkite's pipeline
// schema, example result files). .ci/run sets it; a clone on a stock
// agent has no corpus beside it, and its tests must still pass.
const ReferenceEnv = "BENCHKITE_REFERENCE_DIR"

// ReferenceDir returns rel inside the reference corpus named by
// BENCHKITE_REFERENCE_DIR. Unset, the test is skipped with a message
// saying so; set, the path must exist, or the test fails: a corpus asked
// for and not found is a broken CI machine, not a reason to skip.
func ReferenceDir(t testing.TB, rel string) string {
	t.Helper()
	dir, err := ReferencePath(rel)
	if err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		t.Skipf("SKIPPED: needs the reference corpus; set %s to its directory (.ci/run does)", ReferenceEnv)
	}
	return dir
}

// ReferencePath is ReferenceDir for code that has no testing.TB at hand:
// "" when the variable is unset, an error when it names no such path.
func ReferencePath(rel string) (string, error) {
	root := os.Getenv(ReferenceEnv)
	if root == "" {
		return "", nil
	}
	dir := filepath.Join(root, filepath.FromSlash(rel))
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("%s=%s: %w", ReferenceEnv, root, err)
	}
	return dir, nil
}

// CheckMarkdownTables fails the test for every table row of md whose cell
// count differs from its table's header: an unescaped "|" in a value.
func CheckMarkdownTables(t testing.TB, md string) {
	t.Helper()
	want := -1
	for i, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			want = -1
			continue
		}
		cells := 0
		for j := 1; j < len(line); j++ {
			if line[j] == '|' && line[j-1] != '\\' {
				cells++
			}
		}
		if want < 0 {
			want = cells
			continue
		}
		if cells != want {
			t.Errorf("line %d has %d cells, its table %d:\n%s", i+1, cells, want, line)
		}
	}
}

// WriteFile writes content to path, making the directories it lies in.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// OpenToAll lets every user reach dir: it and each directory above it, up
// to the system's temporary directory, are made mode 0755.
func OpenToAll(t testing.TB, dir string) {
	t.Helper()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// ExecutableCopy copies the test binary, as name, into a fresh directory
// every user can reach, for a test that runs it as another user.
func ExecutableCopy(t testing.TB, name string) string {
	t.Helper()
	dir := t.TempDir()
	OpenToAll(t, dir)
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
