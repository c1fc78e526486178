package report

import (
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// renderSums renders the report of sums judged with no budget (every
// flagged regression kept).
func renderSums(sums []summary.Summary, same []sameBuild, problems []string, skipped []contract.Skipped, buildURL string) string {
	return renderReport(gate.JudgeBuild(sums, same, gate.Budget{}), problems, skipped, buildURL)
}

// styleOf is the report's style for sums judged with no budget.
func styleOf(sums []summary.Summary, same []sameBuild) string {
	return gate.JudgeBuild(sums, same, gate.Budget{}).Style
}
