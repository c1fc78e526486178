package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/gputime"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/trend"
)

// nightCost is one build's GPU time over the recipes the page knows of.
type nightCost struct {
	runs []summary.Summary
	at   time.Time
}

// costOverview is the page's build-wide section: GPU-hours per night and,
// when any run had a price, the cost, from the summaries of the nights
// the history holds (each recipe's completed nights, failed ones too)
// and tonight's (every run, retried tries included). Nil when no night
// has any GPU time.
func costOverview(sums []summary.Summary, pasts map[string]baseline.Nights) *trend.Section {
	nights := map[int]*nightCost{}
	for _, past := range pasts {
		for _, n := range past.Nights {
			nc := nights[n.BuildNumber]
			if nc == nil {
				nc = &nightCost{at: n.CreatedAt}
				nights[n.BuildNumber] = nc
			}
			nc.runs = append(nc.runs, n.Summary)
		}
	}
	gpu := trend.Panel{Title: "GPU time per night", Unit: "GPU-h"}
	cost := trend.Panel{Title: "Cost per night"}
	priced, measured := false, false
	add := func(label string, runs []summary.Summary, at time.Time, tonight bool) {
		t := gputime.Sum(runs)
		h, c := math.NaN(), math.NaN()
		if t.Runs > 0 && t.Total > 0 {
			h, measured = t.Total/3600, true
		}
		if t.Priced > 0 {
			c, priced = t.Cost, true
		}
		hover := label + ": "
		if math.IsNaN(h) {
			hover += "no GPU time recorded"
		} else {
			hover += fmt.Sprintf("%.1f GPU-h over %d run(s)", h, t.Runs)
			if d := t.Dominant(); d != "" {
				hover += fmt.Sprintf(", most in %s (%.0f%%)", d, t.Phases[d]/t.Total*100)
			}
		}
		if !at.IsZero() {
			hover += " · " + at.UTC().Format("2006-01-02")
		}
		costHover := label + ": no price"
		if !math.IsNaN(c) {
			costHover = fmt.Sprintf("%s: %.2f", label, c)
			if t.Priced < t.Runs {
				costHover += fmt.Sprintf(" (%d of %d runs priced)", t.Priced, t.Runs)
			}
		}
		gpu.Points = append(gpu.Points, trend.Point{Label: label, Value: h, Highlight: tonight, Hover: hover})
		cost.Points = append(cost.Points, trend.Point{Label: label, Value: c, Highlight: tonight, Hover: costHover})
	}
	for _, b := range slices.Sorted(maps.Keys(nights)) {
		add("#"+strconv.Itoa(b), nights[b].runs, nights[b].at, false)
	}
	add("tonight", sums, time.Time{}, true)
	if !measured {
		return nil
	}
	o := &trend.Section{ID: "gpu-time", Title: "GPU time and cost per night",
		Subtitle: "GPUs × wall time of every run, summed per build; past nights count the runs the history holds (each recipe's completed nights, failed ones too), tonight every run and its retried tries.",
		Panels:   []trend.Panel{gpu}}
	if priced {
		o.Panels = append(o.Panels, cost)
	}
	return o
}
