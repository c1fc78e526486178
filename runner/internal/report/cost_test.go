package report

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// TestReportShowsCost: the build report gives each priced recipe's
// headline run its cost of a million input, output and total tokens; an
// unpriced recipe has no row.
func TestReportShowsCost(t *testing.T) {
	t.Parallel()
	run := summary.BenchRun{Name: "8k-conc-64", Concurrency: 64, Status: summary.StatusOK, OutputThroughput: 10000, TotalTokenThroughput: 90000}
	priced := run
	priced.PriceTokens(2.5, 8)
	sums := []summary.Summary{
		{Recipe: "a-h200", GPU: "H200", NumGPUs: 8, Verdict: summary.VerdictPass, GPUTime: &summary.GPUTime{GPUs: 8, Total: 7200, HourPrice: 2.5}, Bench: []summary.BenchRun{priced}},
		{Recipe: "b-mi355x", GPU: "MI355X", NumGPUs: 8, Verdict: summary.VerdictPass, GPUTime: &summary.GPUTime{GPUs: 8, Total: 7200}, Bench: []summary.BenchRun{run}},
	}
	out := renderSums(sums, nil, nil, nil, "")
	testutil.CheckMarkdownTables(t, out)
	want := "| recipe | run | GPUs, price per GPU-hour | input | output | total |\n|---|---|---|--:|--:|--:|\n| `a-h200` | 8k-conc-64 | H200 × 8 at 2.50 | 0.0694 | 0.56 | 0.0617 |\n\n"
	if !strings.Contains(out, want) {
		t.Errorf("report lacks the cost table %q:\n%s", want, out)
	}
	if strings.Contains(out, "| `b-mi355x` | 8k-conc-64 | MI355X") {
		t.Errorf("the unpriced recipe has a cost row:\n%s", out)
	}
}
