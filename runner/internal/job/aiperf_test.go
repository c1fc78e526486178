package job

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// Every point the recipe plans comes back from the artifacts: one that
// wrote no export with the problem that fails the run, and a folder the
// recipe did not plan likewise; the aggregate is not a run.
func TestAIPerfExportsEveryPlannedPoint(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "aiperf-sw")
	for _, p := range []string{"concurrency_2", "concurrency_99", "sweep_aggregate"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p, results.AIPerfExportFile), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	planned, err := workloads.AIPerfConfig{Name: "sw", Args: []workloads.BenchArg{{Flag: "--concurrency", Values: []string{"2,4"}}}}.Points()
	if err != nil {
		t.Fatal(err)
	}
	got, err := aiperfExports(dir, planned)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Point   string
		Problem bool
	}
	var rows []row
	for _, p := range got {
		rows = append(rows, row{p.point, p.problem != ""})
	}
	if diff := cmp.Diff(rows, []row{{"concurrency_2", false}, {"concurrency_4", true}, {"concurrency_99", true}}); diff != "" {
		t.Errorf("aiperfExports() diff (-got +want):\n%s", diff)
	}
	if len(got) == 3 && !strings.Contains(got[1].problem, "aiperf wrote no aiperf-sw/concurrency_4/"+results.AIPerfExportFile+" for the planned sweep point concurrency_4") {
		t.Errorf("missing point's problem = %q", got[1].problem)
	}
	// A config that does not sweep needs its one export.
	if _, err := aiperfExports(dir, []workloads.AIPerfPoint{{}}); err == nil || !strings.Contains(err.Error(), "aiperf wrote no "+results.AIPerfExportFile) {
		t.Errorf("aiperfExports(single run, no export) error = %v", err)
	}
}
