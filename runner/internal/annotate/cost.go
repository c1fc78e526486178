package annotate

import (
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// CostCell is one cost of a million tokens for a table cell, "–" when
// the run had no throughput of that kind.
func CostCell(c *float64) string {
	if c == nil {
		return "–"
	}
	decimals := 2
	if *c < 0.1 {
		decimals = 4
	}
	return Thousands(*c, decimals)
}

// priced are the runs with a cost.
func priced(s summary.Summary) []summary.BenchRun {
	var out []summary.BenchRun
	for _, r := range s.Bench {
		if r.Cost != nil && r.Status == summary.StatusOK {
			out = append(out, r)
		}
	}
	return out
}

// hourPrice is the profile's price of a GPU-hour the summary recorded.
func hourPrice(s summary.Summary) float64 {
	if s.GPUTime != nil {
		return s.GPUTime.HourPrice
	}
	return 0
}

// WriteCostTable writes the cost of a million input, output and all
// tokens of every priced bench run, as InferenceX shows it; nothing when
// the profile has no gpu_hour_price.
func WriteCostTable(b *strings.Builder, s summary.Summary) {
	runs := priced(s)
	if len(runs) == 0 {
		return
	}
	fmt.Fprintf(b, "#### Cost per million tokens\n\nAt %s per GPU-hour (the profile's `gpu_hour_price`) × %d GPU(s), over the tokens an hour at each run's throughput.\n\n", Thousands(hourPrice(s), 2), s.NumGPUs)
	b.WriteString("| run | conc | input | output | total |\n|---|--:|--:|--:|--:|\n")
	for _, r := range runs {
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s |\n", Text(r.Name), r.Concurrency, CostCell(r.Cost.Input), CostCell(r.Cost.Output), CostCell(r.Cost.Total))
	}
	b.WriteString("\n")
}

// costLine is the first priced run's cost, for the part of the
// annotation that is always open; "" without a price.
func costLine(s summary.Summary) string {
	runs := priced(s)
	if len(runs) == 0 {
		return ""
	}
	r := runs[0]
	line := fmt.Sprintf("**Cost per million tokens** (%s, at %s per GPU-hour): input %s, output %s, total %s", Text(r.Name), Thousands(hourPrice(s), 2), CostCell(r.Cost.Input), CostCell(r.Cost.Output), CostCell(r.Cost.Total))
	if len(runs) > 1 {
		line += fmt.Sprintf("; %d more runs in the details", len(runs)-1)
	}
	return line + ".\n\n"
}
