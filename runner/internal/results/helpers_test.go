package results_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
)

// examplesDir returns the reference example files in ../shared.
func examplesDir(t *testing.T) string {
	t.Helper()
	return testutil.ReferenceDir(t, "examples")
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
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

// checkError fails the test unless call returned an error that is
// wantIs (when not nil) and holds every one of msgs.
func checkError(t *testing.T, call string, err, wantIs error, msgs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s error = nil, want an error", call)
	}
	if wantIs != nil && !errors.Is(err, wantIs) {
		t.Errorf("%s error = %v, want errors.Is %v", call, err, wantIs)
	}
	for _, msg := range msgs {
		if !strings.Contains(err.Error(), msg) {
			t.Errorf("%s error = %q, want it to contain %q", call, err, msg)
		}
	}
}

func ptr[T any](v T) *T { return &v }
