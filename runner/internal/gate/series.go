package gate

import (
	"context"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// RecipeChange says where the recipe last changed among the nights h
// holds (newest first) and tonight, whose fingerprint is fp: "" when it
// did not. first is the index, oldest night first, of the first night of
// tonight's recipe (len(h.Nights) when that is tonight). A recipe change
// is a known change point, not a new series: the gates still judge
// tonight against the nights before it (regression.go). Nights that
// recorded no fingerprint count as tonight's recipe, and so does every
// night when tonight has none.
func RecipeChange(h baseline.Nights, fp *summary.Fingerprint) (change string, first int) {
	if fp == nil {
		return "", 0
	}
	for i, n := range h.Nights {
		old := n.Summary.Fingerprint
		if old == nil || old.Hash == fp.Hash {
			continue
		}
		what := strings.Join(fp.Changed(old), ", ")
		if i == 0 {
			return fmt.Sprintf("the recipe changed tonight: %s (build #%d ran the old recipe)", what, n.BuildNumber), len(h.Nights)
		}
		return fmt.Sprintf("the recipe changed at build #%d: %s", h.Nights[i-1].BuildNumber, what), len(h.Nights) - i
	}
	return "", 0
}

// Series says where the recipe last changed within the nights a trend
// shows, "" when it did not.
func Series(ctx context.Context, h *baseline.History, sum *summary.Summary) string {
	if h == nil {
		return ""
	}
	nights, err := h.Last(ctx, sum.Recipe, contract.TrendNights)
	if err != nil {
		return ""
	}
	change, _ := RecipeChange(nights, sum.Fingerprint)
	return change
}
