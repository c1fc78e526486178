package gate

import (
	"context"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Comparable keeps the nights whose fingerprint is tonight's: a night that
// ran other serve args or another bench shape is another series, and
// judging against it would raise a false alarm. Nights that recorded no
// fingerprint (written before fingerprints existed) are kept, and so is
// everything when tonight has none. series names where tonight's series
// starts when nights were dropped, "" otherwise.
func Comparable(h baseline.Nights, fp *summary.Fingerprint) (kept baseline.Nights, series string) {
	if fp == nil {
		return h, ""
	}
	kept = baseline.Nights{Missed: h.Missed, Unreadable: h.Unreadable}
	first := -1 // newest night of another series
	for i, n := range h.Nights {
		if n.Summary.Fingerprint == nil || n.Summary.Fingerprint.Hash == fp.Hash {
			kept.Nights = append(kept.Nights, n)
			continue
		}
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return kept, ""
	}
	other := h.Nights[first]
	changed := strings.Join(fp.Changed(other.Summary.Fingerprint), ", ")
	if first == 0 {
		return kept, fmt.Sprintf("new series since this build: %s changed (build #%d ran the old ones)", changed, other.BuildNumber)
	}
	return kept, fmt.Sprintf("new series since build #%d: %s changed", h.Nights[first-1].BuildNumber, changed)
}

// Series says where sum's series of nights starts when a recipe change
// started a new one within the nights a trend shows, "" otherwise.
func Series(ctx context.Context, h *baseline.History, sum *summary.Summary) string {
	if h == nil {
		return ""
	}
	nights, err := h.Last(ctx, sum.Recipe, contract.TrendNights)
	if err != nil {
		return ""
	}
	_, series := Comparable(nights, sum.Fingerprint)
	return series
}
