package workloads

import (
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// expectKind is what differs between the gates of lm_eval tasks and of
// bfcl categories.
type expectKind struct {
	metric      string  // the metric when the gate names none
	metricField bool    // whether a gate may name its metric
	max         float64 // the largest score there is
	paired      bool    // whether a gate may set alpha (lm_eval's samples)
}

// expectRead is one gate as read, with the nodes its checks point at.
type expectRead struct {
	e       Expectation
	hasTol  bool // whether tolerance was read
	bounded bool // whether min, baseline or baseline_from was given

	alphaNode, minNode, baselineNode, tolNode *yaml.Node
}

func (l *loader) decodeExpectations(n *yaml.Node, what string, kind expectKind) []Expectation {
	var out []Expectation
	one := func(item *yaml.Node, what string) {
		if e, ok := l.decodeExpectation(item, what, kind); ok {
			out = append(out, e)
		}
	}
	if n.Kind == yaml.SequenceNode {
		l.d.Items(n, what, func(i int, item *yaml.Node) { one(item, fmt.Sprintf("%s[%d]", what, i)) })
	} else {
		one(n, what)
	}
	return out
}

// decodeExpectation reads one gate and checks it as a whole; it returns
// false when the gate is not a mapping.
func (l *loader) decodeExpectation(item *yaml.Node, what string, kind expectKind) (Expectation, bool) {
	g := &expectRead{e: Expectation{Metric: kind.metric, Line: item.Line}}
	l.d.Fields(item, what, l.expectationFields(g, what, kind))
	if item.Kind != yaml.MappingNode {
		return Expectation{}, false
	}
	// The metric may be named after the bounds, so they are checked
	// against its range once the whole gate is read.
	l.checkExpectationRange(g, what)
	l.checkExpectationBounds(item, g, what)
	if kind.paired && g.e.BaselineFrom != "" && g.alphaNode == nil {
		g.e.Alpha = DefaultAlpha
	}
	return g.e, true
}

// expectationFields are the fields a gate of kind may have, each read
// into g.
func (l *loader) expectationFields(g *expectRead, what string, kind expectKind) []strictyaml.Field {
	d := l.d
	fields := []strictyaml.Field{
		{Name: "min", Decode: func(_, v *yaml.Node) {
			g.bounded, g.minNode = true, v
			g.e.Min = l.optFloat(v, what+".min", 0, kind.max)
		}},
		{Name: "baseline", Decode: func(_, v *yaml.Node) {
			g.bounded, g.baselineNode = true, v
			g.e.Baseline = l.optFloat(v, what+".baseline", 0, kind.max)
		}},
		{Name: "tolerance", Decode: func(_, v *yaml.Node) {
			g.tolNode = v
			g.e.Tolerance, g.hasTol = d.Float(v, what+".tolerance", 0, kind.max)
		}},
		{Name: "baseline_from", Decode: func(_, v *yaml.Node) {
			g.bounded = true
			if s, ok := l.word(v, what+".baseline_from", nameRE, what+".baseline_from", " is not a recipe name"); ok {
				g.e.BaselineFrom = s
				l.baselineRefs = append(l.baselineRefs, baselineRef{name: s, node: v})
			}
		}},
	}
	if kind.paired {
		fields = append(fields, strictyaml.Field{Name: "alpha", Decode: func(_, v *yaml.Node) {
			g.alphaNode = v
			if f, ok := l.decodeAlpha(v, what+".alpha"); ok {
				g.e.Alpha = f
			}
		}})
	}
	if kind.metricField {
		fields = append([]strictyaml.Field{{Name: "metric", Decode: func(_, v *yaml.Node) {
			if s, ok := l.word(v, what+".metric", metricRE, what+".metric", " is not a metric key such as exact_match,strict-match"); ok {
				g.e.Metric = s
			}
		}}}, fields...)
	}
	return fields
}

// decodeAlpha reads a paired gate's significance level, strictly between
// 0 and 1.
func (l *loader) decodeAlpha(v *yaml.Node, what string) (float64, bool) {
	f, ok := l.d.Float(v, what, 0, 1)
	if !ok {
		return 0, false
	}
	if f == 0 || f == 1 {
		l.d.Errorf(v, "%s must be above 0 and below 1, got %g", what, f)
		return 0, false
	}
	return f, true
}

// checkExpectationRange reports bounds outside the range of the gate's
// metric, where the range is known.
func (l *loader) checkExpectationRange(g *expectRead, what string) {
	lo, hi, known := metricRange(g.e.Metric)
	if !known {
		return
	}
	outside := func(n *yaml.Node, field string, v, from, to float64) {
		if n != nil && (v < from || v > to) {
			l.d.Errorf(n, "%s.%s is %g, outside the %g to %g range of %s%s", what, field, v, from, to, g.e.Metric, percentHint(v, hi))
		}
	}
	if g.e.Min != nil {
		outside(g.minNode, "min", *g.e.Min, lo, hi)
	}
	if g.e.Baseline != nil {
		outside(g.baselineNode, "baseline", *g.e.Baseline, lo, hi)
	}
	if g.hasTol {
		outside(g.tolNode, "tolerance", g.e.Tolerance, 0, hi-lo)
	}
}

// checkExpectationBounds reports a gate without a bound, and fields that
// need or exclude one another.
func (l *loader) checkExpectationBounds(item *yaml.Node, g *expectRead, what string) {
	d, e := l.d, &g.e
	switch {
	case !g.bounded:
		d.Errorf(item, "%s needs min, baseline or baseline_from", what)
	case e.Baseline != nil && e.BaselineFrom != "":
		d.Errorf(item, "%s: baseline and baseline_from exclude each other", what)
	case g.hasTol && e.Baseline == nil && e.BaselineFrom == "":
		d.Errorf(item, "%s: tolerance needs baseline or baseline_from", what)
	case g.alphaNode != nil && e.BaselineFrom == "":
		d.Errorf(g.alphaNode, "%s.alpha needs baseline_from: only the per-question comparison with another recipe uses it", what)
	}
}

// metricRange is the range of lm_eval's own metrics (lm_eval/api/metrics.py
// and the tasks' instruction-following scores), by the part of the key
// before the filter: exact_match,flexible-extract is exact_match. Others,
// such as perplexities, are unbounded or unknown here.
func metricRange(metric string) (lo, hi float64, known bool) {
	name, _, _ := strings.Cut(metric, ",")
	switch name {
	case "acc", "acc_norm", "acc_mutual_info", "acc_bytes", "acc_all", "exact_match", "f1",
		"prompt_level_strict_acc", "prompt_level_loose_acc", "inst_level_strict_acc", "inst_level_loose_acc":
		return 0, 1, true
	case "mcc":
		return -1, 1, true
	case "bleu", "chrf":
		return 0, 100, true
	}
	return 0, 0, false
}

// percentHint adds a hint when a bound on a 0 to 1 score reads like a
// percentage.
func percentHint(v, hi float64) string {
	if hi == 1 && v > 1 && v <= 100 {
		return fmt.Sprintf(" (a fraction: %g %% is %g)", v, v/100)
	}
	return ""
}
