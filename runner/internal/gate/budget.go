package gate

import (
	"slices"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// DefaultBuildFDR is a build's false-alarm budget: the
// Benjamini–Hochberg level over the night's regression tests. With 20
// recipes × 3 metrics, each at a 1 % false-alarm rate, a build would
// otherwise be falsely red almost every other night.
const DefaultBuildFDR = 0.05

// BudgetTest is one regression gate of the build and what the budget
// made of it.
type BudgetTest struct {
	Recipe, Subject, Metric string
	P                       float64
	// Flagged: its own gate failed it; Fails: it still fails within the
	// build's budget.
	Flagged, Fails bool
}

// Budget is the build's false-alarm budget spent over its regression
// tests: Benjamini–Hochberg at Q over every regression gate's p-value.
type Budget struct {
	Q     float64
	Tests []BudgetTest
	// Threshold is the largest p-value that fails (0 when none does).
	Threshold float64
}

// SpendBudget runs Benjamini–Hochberg at q over the regression gates of
// the build's summaries. A gate fails the build only when its own gate
// flagged it and the procedure keeps it.
func SpendBudget(sums []summary.Summary, q float64) Budget {
	b := Budget{Q: q}
	for _, s := range sums {
		for _, g := range s.Gates {
			if g.Kind != summary.GateRegression || g.Detector == nil {
				continue
			}
			p := g.Detector.P
			if g.Verdict != summary.VerdictFail && p == 0 {
				p = 1 // an older summary without a p-value that passed
			}
			b.Tests = append(b.Tests, BudgetTest{Recipe: s.Recipe, Subject: g.Subject, Metric: g.Metric, P: p, Flagged: g.Verdict == summary.VerdictFail})
		}
	}
	return b.spend()
}

// Spend runs Benjamini–Hochberg at q over tests, the night's regression
// gates: what SpendBudget does with a build's summaries, and what `runner
// calibrate` measures.
func Spend(tests []BudgetTest, q float64) Budget {
	return Budget{Q: q, Tests: slices.Clone(tests)}.spend()
}

func (b Budget) spend() Budget {
	order := make([]int, len(b.Tests))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int {
		switch {
		case b.Tests[x].P < b.Tests[y].P:
			return -1
		case b.Tests[x].P > b.Tests[y].P:
			return 1
		}
		return 0
	})
	m := float64(len(b.Tests))
	for rank, i := range order {
		if b.Tests[i].P <= float64(rank+1)*b.Q/m {
			b.Threshold = b.Tests[i].P
		}
	}
	for i := range b.Tests {
		b.Tests[i].Fails = b.Tests[i].Flagged && b.Tests[i].P <= b.Threshold && b.Threshold > 0
	}
	return b
}

// Failed says whether any test fails within the budget.
func (b Budget) Failed() bool {
	return slices.ContainsFunc(b.Tests, func(t BudgetTest) bool { return t.Fails })
}

// Fails says whether gate g of recipe fails the build: a regression gate
// when the budget keeps it, any other gate when it failed.
func (b Budget) Fails(recipe string, g summary.GateResult) bool {
	if g.Kind != summary.GateRegression || g.Detector == nil {
		return g.Verdict == summary.VerdictFail
	}
	for _, t := range b.Tests {
		if t.Recipe == recipe && t.Subject == g.Subject && t.Metric == g.Metric {
			return t.Fails
		}
	}
	return g.Verdict == summary.VerdictFail
}
