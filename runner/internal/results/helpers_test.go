package results_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// examplesDir returns the shared reference examples, found next to the
// repository root. CI must have them; elsewhere the test is skipped.
func examplesDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("Getwd() error = %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package directory")
		}
		dir = parent
	}
	examples := filepath.Join(dir, "..", "shared", "reference", "examples")
	if _, err := os.Stat(examples); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("reference examples missing in CI: %v", err)
		}
		t.Skipf("reference examples not available (%v); they sit in ../shared next to the repository", err)
	}
	return examples
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile(%q) error = %v", path, err)
	}
	return data
}

// checkGolden compares got with testdata/name, rewriting it under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("WriteFile(%q) error = %v", path, err)
		}
		return
	}
	want := readFile(t, path)
	if !bytes.Equal(got, want) {
		t.Errorf("%s mismatch; run go test -update to accept (-got +want):\n%s", path, cmp.Diff(string(got), string(want)))
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
