package report

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/trend"
	"github.com/benchkite/benchkite/workloads"
)

// trendNights is how many past nights the page shows per recipe: every
// night the history step fetched, up to the regression gates' default.
const trendNights = 30

// writeTrendPage draws every recipe's nights, tonight last, into the one
// HTML page the annotations link to (annotate.TrendPage under root).
func writeTrendPage(ctx context.Context, root string, build gate.Build, history *baseline.History, title string) (string, error) {
	sums := judgedSummaries(build)
	page := trend.Page{Title: title, Subtitle: "Every recipe's nights, oldest first, tonight last. A grey line marks where the recipe changed: a known change point, not a new series."}
	pasts := map[string]baseline.Nights{}
	for _, r := range rowsOf(build) {
		s := r.s
		var past baseline.Nights
		if history != nil {
			past, _ = history.Last(ctx, s.Recipe, trendNights)
		}
		pasts[s.Recipe] = past
		sub := fmt.Sprintf("%s × %d · %s · %d past night(s)", s.GPU, s.NumGPUs, s.Model, len(past.Nights))
		if run, _, _ := headline(s); run != nil {
			sub += " · bench run " + run.Name
		}
		if s.VLLMCommit != "" {
			sub += " · tonight vLLM " + s.VLLMCommit
		}
		sec := trend.Section{ID: s.Recipe, Title: s.Recipe, Subtitle: sub, Verdict: r.verdict, Panels: pagePanels(s, past)}
		if len(sec.Panels) == 0 {
			sec.Note = "Nothing measured tonight: " + plainReason(s)
		}
		page.Sections = append(page.Sections, sec)
	}
	page.Overview = costOverview(sums, pasts)
	path := filepath.Join(root, strings.TrimPrefix(annotate.TrendPage, contract.ResultsRoot+"/"))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("trend page: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("trend page: %w", err)
	}
	if err := trend.WritePage(f, page); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// metricSeries is one chart of the page: how to read the metric from a
// night, and which gate judges it.
type metricSeries struct {
	title, unit, gateMetric, subject string
	higher                           bool
	perGPU                           bool // the gate judges the total; the chart shows per GPU
	value                            func(s summary.Summary) float64
}

// pagePanels are a recipe's charts: throughput per GPU, TPOT, TTFT, EAGLE
// acceptance of its first bench run, its headline accuracy score, and
// the server's time to ready.
func pagePanels(s summary.Summary, past baseline.Nights) []trend.Panel {
	var series []metricSeries
	run, task, metric := headline(s)
	if run != nil {
		series = append(series, benchSeries(run)...)
	}
	if task != nil && metric != "" {
		series = append(series, scoreSeries(task.Task+" "+metric, task.Task, metric))
	}
	if bfcl := bfclTask(s); bfcl != "" {
		series = append(series, scoreSeries(bfcl+" (BFCL)", bfcl, workloads.BFCLMetric))
	}
	if s.Startup != nil && s.Startup.ReadySeconds > 0 {
		series = append(series, startupSeries())
	}
	var panels []trend.Panel
	for _, m := range series {
		panels = append(panels, panelOf(s, past, m))
	}
	return panels
}

// benchSeries are the charts of a recipe's headline bench run: its
// throughput per GPU and latencies, and its cost and EAGLE acceptance
// when tonight's run has them.
func benchSeries(run *summary.BenchRun) []metricSeries {
	name := run.Name
	series := []metricSeries{
		{title: "Output throughput per GPU", unit: "tok/s", gateMetric: "output_throughput", subject: name, higher: true, perGPU: true,
			value: benchValue(name, func(r *summary.BenchRun) float64 { return r.OutputThroughputPerGPU })},
		{title: "TPOT p50", unit: "ms", gateMetric: "median_tpot_ms", subject: name,
			value: benchValue(name, func(r *summary.BenchRun) float64 { return r.TPOT.Median })},
		{title: "TTFT p50", unit: "ms", gateMetric: "median_ttft_ms", subject: name,
			value: benchValue(name, func(r *summary.BenchRun) float64 { return r.TTFT.Median })},
	}
	if run.Cost != nil && run.Cost.Output != nil {
		series = append(series, metricSeries{title: "Cost per million output tokens", unit: "per Mtok",
			value: benchValue(name, func(r *summary.BenchRun) float64 {
				if r.Cost == nil || r.Cost.Output == nil {
					return math.NaN()
				}
				return *r.Cost.Output
			})})
	}
	return append(series, specDecodeSeries(run)...)
}

// specDecodeSeries are the EAGLE charts of a bench run that speculated:
// its acceptance rate, and its acceptance length when it reports one.
func specDecodeSeries(run *summary.BenchRun) []metricSeries {
	if run.SpecDecode == nil {
		return nil
	}
	name := run.Name
	series := []metricSeries{{title: "EAGLE acceptance", unit: "%", gateMetric: "spec_decode_acceptance_rate", subject: name, higher: true,
		value: benchValue(name, func(r *summary.BenchRun) float64 {
			if r.SpecDecode == nil {
				return math.NaN()
			}
			return r.SpecDecode.AcceptanceRate
		})}}
	if run.SpecDecode.AcceptanceLength > 0 {
		// Tokens a verification step yields: what a drop in
		// acceptance costs, and what a regression gate judges.
		series = append(series, metricSeries{title: "EAGLE acceptance length", unit: "tokens", gateMetric: "spec_decode_acceptance_length", subject: name, higher: true,
			value: benchValue(name, func(r *summary.BenchRun) float64 {
				if r.SpecDecode == nil || r.SpecDecode.AcceptanceLength <= 0 {
					return math.NaN()
				}
				return r.SpecDecode.AcceptanceLength
			})})
	}
	return series
}

// benchValue reads f of a night's OK bench run of that name; NaN, a gap
// in the chart, when the night has none.
func benchValue(name string, f func(*summary.BenchRun) float64) func(summary.Summary) float64 {
	return func(s summary.Summary) float64 {
		for i := range s.Bench {
			if s.Bench[i].Name == name && s.Bench[i].Status == summary.StatusOK {
				return f(&s.Bench[i])
			}
		}
		return math.NaN()
	}
}

// scoreSeries is the chart of an accuracy score: the metric of a night's
// OK result of task, higher being better.
func scoreSeries(title, task, metric string) metricSeries {
	return metricSeries{title: title, gateMetric: metric, subject: task, higher: true,
		value: func(s summary.Summary) float64 {
			for _, a := range s.Accuracy {
				if a.Task == task && a.Status == summary.StatusOK {
					if v, ok := a.Metrics[metric]; ok {
						return v
					}
				}
			}
			return math.NaN()
		}}
}

// startupSeries is the chart of the server's time to ready: what every
// night pays before it measures; its gate's band when the recipe judges
// it (vllm.startup_regression).
func startupSeries() metricSeries {
	return metricSeries{title: "Server time to ready", unit: "s", gateMetric: "ready_s", subject: workloads.StartupSubject,
		value: func(s summary.Summary) float64 {
			if s.Startup == nil || s.Startup.ReadySeconds <= 0 {
				return math.NaN()
			}
			return s.Startup.ReadySeconds
		}}
}

// bfclTask is the lowest-scoring BFCL category tonight, where a broken
// tool-call parser shows, or "".
func bfclTask(s summary.Summary) string {
	low, name := 2.0, ""
	for _, a := range s.Accuracy {
		if v, ok := a.Metrics[workloads.BFCLMetric]; ok && strings.HasPrefix(a.Task, "bfcl_") && a.Status == summary.StatusOK && v < low {
			low, name = v, a.Task
		}
	}
	return name
}

// panelOf is one metric's chart: the past nights oldest first (those
// whose job failed marked), tonight, the gate's band and limit, where a
// flagged change began and where the series (the recipe's configuration)
// last changed.
func panelOf(s summary.Summary, past baseline.Nights, m metricSeries) trend.Panel {
	u := annotate.UnitOf(m.gateMetric)
	if m.unit == "%" {
		u = annotate.Percent
	}
	p := trend.Panel{Title: m.title, Unit: m.unit, HigherIsBetter: m.higher}
	change, first := gate.RecipeChange(past, s.Fingerprint)
	builds := map[int]int{}
	for i := len(past.Nights) - 1; i >= 0; i-- {
		n := past.Nights[i]
		v := m.value(n.Summary)
		label := "#" + strconv.Itoa(n.BuildNumber)
		hover := label + ": " + hoverValue(v, u, m.unit)
		if c := n.Summary.VLLMCommit; c != "" {
			hover += " · vLLM " + c
		}
		if !n.CreatedAt.IsZero() {
			hover += " · " + n.CreatedAt.UTC().Format("2006-01-02")
		}
		if change != "" && len(p.Points) < first {
			hover += " · the recipe before it changed"
		}
		builds[n.BuildNumber] = len(p.Points)
		p.Points = append(p.Points, trend.Point{Label: label, Value: v, Hover: hover, Failed: n.Failed})
	}
	tonight := m.value(s)
	p.Points = append(p.Points, trend.Point{Label: "tonight", Value: tonight, Highlight: true, Hover: "tonight: " + hoverValue(tonight, u, m.unit)})
	if change != "" {
		p.Marks = append(p.Marks, trend.Mark{Index: first, Label: "recipe changed", Series: true})
	}
	g := gateOn(s, m.subject, m.gateMetric)
	if g == nil {
		return p
	}
	scale := 1.0
	if m.perGPU && s.NumGPUs > 0 {
		scale = float64(s.NumGPUs)
	}
	if d := g.Detector; d != nil && g.Baseline != nil {
		base := *g.Baseline / scale
		cv := d.NoiseCVPct / 100
		p.Band = &trend.Band{Low: base * (1 - cv), High: base * (1 + cv)}
		limit := base * (1 - d.ThresholdPct/100)
		if !m.higher {
			limit = base * (1 + d.ThresholdPct/100)
		}
		p.Limit = &limit
	} else if g.Baseline != nil && g.Tolerance != nil {
		limit := (*g.Baseline - *g.Tolerance) / scale
		p.Limit = &limit
	} else if v, ok := boundValue(g.Bound); ok {
		limit := v / scale
		p.Limit = &limit
	}
	if cp := g.ChangePoint; cp != nil && g.Verdict == summary.VerdictFail {
		idx := len(p.Points) - 1
		if i, ok := builds[cp.FirstBad.Build]; ok && !cp.FirstBad.Tonight {
			idx = i
		}
		p.Marks = append(p.Marks, trend.Mark{Index: idx, Label: "change"})
	}
	return p
}

// boundValue reads the number of a ">= 0.85" or "<= 120" bound.
func boundValue(bound string) (float64, bool) {
	f := strings.Fields(bound)
	if len(f) < 2 || (f[0] != ">=" && f[0] != "<=" && f[0] != ">" && f[0] != "<") {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[1], 64)
	return v, err == nil
}

func hoverValue(v float64, u annotate.Unit, unit string) string {
	if math.IsNaN(v) {
		return "no value"
	}
	s := annotate.Num(v, u)
	if unit != "" && u != annotate.Percent {
		s += " " + unit
	}
	return s
}

// plainReason is why a run measured nothing, as text: its first failed
// phase and cause, else its first problem.
func plainReason(s summary.Summary) string {
	for _, p := range s.Phases {
		if p.Status == summary.StatusFailed || p.Status == summary.StatusCanceled {
			return p.Name + " " + p.Status + ": " + annotate.CauseLine(p)
		}
	}
	if len(s.Problems) > 0 {
		return annotate.Clip(s.Problems[0], 240)
	}
	return "no bench run or score"
}
