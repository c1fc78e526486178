package steptest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// moduleRoot returns the nearest directory at or above the working
// directory that holds a go.mod; tests run in their package directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("finding module root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// inCI reports whether the test runs in CI, where everything the tests
// need must be present.
func inCI() bool { return os.Getenv("CI") == "true" }

// missing fails the test in CI and skips it elsewhere, loudly, so a skip
// is never silent and never hides a gap in CI.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if inCI() {
		t.Fatalf("%s (CI=true, so this is a failure, not a skip)", msg)
	}
	t.Skipf("SKIPPED: %s", msg)
}

// SharedDir returns rel inside ../shared beside the module root, where the
// reference material lives. CI must have it: there its absence fails the
// test; elsewhere it skips, loudly.
func SharedDir(t testing.TB, rel string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "..", "shared", filepath.FromSlash(rel))
	if _, err := os.Stat(dir); err != nil {
		missing(t, "%s is not available (%v); it sits in ../shared beside the repository", dir, err)
	}
	return dir
}
