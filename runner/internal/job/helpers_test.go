package job

import (
	"path/filepath"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
)

// seedRecipe is the shipped recipe the tests run against, relative to
// this package.
const (
	seedRecipe   = "../../../testdata/workloads/minimax_m3_mi355x.yaml"
	dockerRecipe = "../../../testdata/workloads/gpt_oss_120b_h200.yaml"
)

// mapGetenv is a getenv over a fixed map; nil reads as an empty env.
func mapGetenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// checkGolden compares got with testdata/<name>, or rewrites the file
// with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	testutil.Golden(t, filepath.Join("testdata", name), got)
}

func ptr[T any](v T) *T { return &v }
