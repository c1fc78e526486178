// Package testutil holds what the tests of every package share: the one
// -update flag for golden files, the module root, and ../shared beside it.
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

// SharedDir returns rel inside ../shared beside the module root, where the
// reference material lives. CI must have it: there its absence fails the
// test; elsewhere it skips, loudly.
func SharedDir(t testing.TB, rel string) string {
	t.Helper()
	dir := filepath.Join(ModuleRoot(t), "..", "shared", filepath.FromSlash(rel))
	if _, err := os.Stat(dir); err != nil {
		Missing(t, "%s is not available (%v); it sits in ../shared beside the repository", dir, err)
	}
	return dir
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
