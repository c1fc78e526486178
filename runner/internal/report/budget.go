package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// renderBudget shows the build's false-alarm budget and every regression
// still open or accepted.
func renderBudget(b gate.Budget) string {
	if len(b.Tests) == 0 {
		return ""
	}
	var w strings.Builder
	flagged, fails := 0, 0
	var released []string
	for _, t := range b.Tests {
		if t.Flagged {
			flagged++
		}
		if t.Fails {
			fails++
		}
		if t.Flagged && !t.Fails {
			released = append(released, fmt.Sprintf("%s %s (p %s)", annotate.InlineCode(t.Recipe), annotate.Text(t.Subject+" "+t.Metric), numfmt.P(t.P)))
		}
	}
	fmt.Fprintf(&w, "False-alarm budget: Benjamini–Hochberg at %s%% over %d regression tests: %d flagged, %d fail the build", numfmt.Exact(b.Q*100), len(b.Tests), flagged, fails)
	if len(released) > 0 {
		fmt.Fprintf(&w, "; within the budget, not failures: %s", strings.Join(released, ", "))
	}
	w.WriteString(".\n")
	return w.String()
}

// renderLifecycle lists the regressions still open (red every night the
// build's false-alarm budget keeps them, until fixed or accepted), those
// open the budget released tonight, and the accepted ones, with their
// record.
func renderLifecycle(rows []gate.Row) string {
	var w strings.Builder
	for _, r := range rows {
		s := r.Summary
		for _, g := range s.Gates {
			d := g.Detector
			if g.Kind != summary.GateRegression || d == nil {
				continue
			}
			name := annotate.InlineCode(s.Recipe) + " " + annotate.Text(g.Subject+" "+g.Metric)
			switch {
			case d.OpenSince > 0 && released(r, g):
				fmt.Fprintf(&w, "- released regression: %s, open since #%d (p %s): within the build's false-alarm budget, not a failure tonight; red on a night the budget keeps it, until fixed or accepted\n", name, d.OpenSince, numfmt.P(d.P))
			case d.OpenSince > 0:
				fmt.Fprintf(&w, "- open regression: %s since #%d; red until fixed or accepted (`regression.accept: {since, reason, metrics}` in the recipe)\n", name, d.OpenSince)
			}
			if d.Accepted != "" {
				fmt.Fprintf(&w, "- accepted regression: %s %s\n", name, annotate.Text(d.Accepted))
			}
		}
	}
	if w.Len() == 0 {
		return ""
	}
	return "\nRegressions:\n\n" + w.String()
}

// released says whether the build's false-alarm budget released the
// row's regression gate g.
func released(r gate.Row, g summary.GateResult) bool {
	return slices.ContainsFunc(r.Released, func(x summary.GateResult) bool {
		return x.Kind == g.Kind && x.Subject == g.Subject && x.Metric == g.Metric
	})
}
