package report

import (
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/annotate"
)

// writeCost is the cost of a million tokens of each recipe's headline
// bench run, where its profile has a gpu_hour_price, as InferenceX shows
// it; nothing when no recipe is priced.
func writeCost(b *strings.Builder, rows []row) {
	var lines []string
	for _, r := range rows {
		run, _, _ := headline(r.s)
		if run == nil || run.Cost == nil {
			continue
		}
		price := 0.0
		if r.s.GPUTime != nil {
			price = r.s.GPUTime.HourPrice
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s × %d at %s | %s | %s | %s |", annotate.InlineCode(r.s.Recipe), annotate.Text(run.Name),
			annotate.Text(r.s.GPU), r.s.NumGPUs, annotate.Thousands(price, 2),
			annotate.CostCell(run.Cost.Input), annotate.CostCell(run.Cost.Output), annotate.CostCell(run.Cost.Total)))
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("**Cost per million tokens** (headline run; GPU-hour price from the profile's `gpu_hour_price`):\n\n")
	b.WriteString("| recipe | run | GPUs, price per GPU-hour | input | output | total |\n|---|---|---|--:|--:|--:|\n")
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n\n")
}
