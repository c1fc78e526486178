package results_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchkite/benchkite/steps/steptest"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// examplesDir returns the reference example files in ../shared.
func examplesDir(t *testing.T) string {
	t.Helper()
	return steptest.SharedDir(t, "reference/examples")
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
