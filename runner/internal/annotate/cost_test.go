package annotate

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// TestRenderCost: with a GPU-hour price, the annotation says what a
// million input, output and total tokens cost, above the details and per
// run in them; without one it says nothing of cost.
func TestRenderCost(t *testing.T) {
	t.Parallel()
	run := func(name string, conc int) summary.BenchRun {
		r := summary.BenchRun{Name: name, Concurrency: conc, Status: summary.StatusOK, OutputThroughput: 10000, TotalTokenThroughput: 90000}
		r.PriceTokens(2.5, 8)
		return r
	}
	s := summary.Summary{Recipe: "r-h200", GPU: "H200", NumGPUs: 8, TP: 8, Model: "m", Verdict: summary.VerdictPass,
		GPUTime: &summary.GPUTime{GPUs: 8, HourPrice: 2.5},
		Bench:   []summary.BenchRun{run("8k-conc-64", 64), run("8k-conc-128", 128), {Name: "broken", Status: summary.StatusFailed, Error: "x"}}}
	got := Render(s, "")
	testutil.CheckMarkdownTables(t, got)
	for _, want := range []string{
		"**Cost per million tokens** (8k-conc-64, at 2.50 per GPU-hour): input 0.0694, output 0.56, total 0.0617; 1 more runs in the details.",
		"#### Cost per million tokens\n\nAt 2.50 per GPU-hour (the profile's `gpu_hour_price`) × 8 GPU(s)",
		"| 8k-conc-64 | 64 | 0.0694 | 0.56 | 0.0617 |\n| 8k-conc-128 | 128 | 0.0694 | 0.56 | 0.0617 |\n\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("annotation lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "**Cost per million tokens**") > strings.Index(got, "<details>") {
		t.Errorf("the cost line is inside the details:\n%s", got)
	}
	s.GPUTime.HourPrice = 0
	for i := range s.Bench {
		s.Bench[i].Cost = nil
	}
	if got := Render(s, ""); strings.Contains(got, "Cost per million") {
		t.Errorf("an unpriced run's annotation speaks of cost:\n%s", got)
	}
}
