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

func (l *loader) decodeExpectations(n *yaml.Node, what string, kind expectKind) []Expectation {
	d := l.d
	var out []Expectation
	one := func(item *yaml.Node, what string) {
		e := Expectation{Metric: kind.metric, Line: item.Line}
		var hasTol, bounded bool
		var alphaNode, minNode, baselineNode, tolNode *yaml.Node
		fields := []strictyaml.Field{
			{Name: "min", Decode: func(_, v *yaml.Node) {
				bounded, minNode = true, v
				e.Min = l.optFloat(v, what+".min", 0, kind.max)
			}},
			{Name: "baseline", Decode: func(_, v *yaml.Node) {
				bounded, baselineNode = true, v
				e.Baseline = l.optFloat(v, what+".baseline", 0, kind.max)
			}},
			{Name: "tolerance", Decode: func(_, v *yaml.Node) {
				tolNode = v
				e.Tolerance, hasTol = d.Float(v, what+".tolerance", 0, kind.max)
			}},
			{Name: "baseline_from", Decode: func(_, v *yaml.Node) {
				bounded = true
				if s, ok := l.word(v, what+".baseline_from", nameRE, what+".baseline_from", " is not a recipe name"); ok {
					e.BaselineFrom = s
					l.baselineRefs = append(l.baselineRefs, baselineRef{name: s, node: v})
				}
			}},
		}
		if kind.paired {
			fields = append(fields, strictyaml.Field{Name: "alpha", Decode: func(_, v *yaml.Node) {
				alphaNode = v
				if f, ok := d.Float(v, what+".alpha", 0, 1); ok {
					if f == 0 || f == 1 {
						d.Errorf(v, "%s.alpha must be above 0 and below 1, got %g", what, f)
						return
					}
					e.Alpha = f
				}
			}})
		}
		if kind.metricField {
			fields = append([]strictyaml.Field{{Name: "metric", Decode: func(_, v *yaml.Node) {
				if s, ok := l.word(v, what+".metric", metricRE, what+".metric", " is not a metric key such as exact_match,strict-match"); ok {
					e.Metric = s
				}
			}}}, fields...)
		}
		d.Fields(item, what, fields)
		if item.Kind != yaml.MappingNode {
			return
		}
		// The metric may be named after the bounds, so they are checked
		// against its range once the whole gate is read.
		if lo, hi, known := metricRange(e.Metric); known {
			outside := func(n *yaml.Node, field string, v, from, to float64) {
				if n != nil && (v < from || v > to) {
					d.Errorf(n, "%s.%s is %g, outside the %g to %g range of %s%s", what, field, v, from, to, e.Metric, percentHint(v, hi))
				}
			}
			if e.Min != nil {
				outside(minNode, "min", *e.Min, lo, hi)
			}
			if e.Baseline != nil {
				outside(baselineNode, "baseline", *e.Baseline, lo, hi)
			}
			if hasTol {
				outside(tolNode, "tolerance", e.Tolerance, 0, hi-lo)
			}
		}
		switch {
		case !bounded:
			d.Errorf(item, "%s needs min, baseline or baseline_from", what)
		case e.Baseline != nil && e.BaselineFrom != "":
			d.Errorf(item, "%s: baseline and baseline_from exclude each other", what)
		case hasTol && e.Baseline == nil && e.BaselineFrom == "":
			d.Errorf(item, "%s: tolerance needs baseline or baseline_from", what)
		case alphaNode != nil && e.BaselineFrom == "":
			d.Errorf(alphaNode, "%s.alpha needs baseline_from: only the per-question comparison with another recipe uses it", what)
		}
		if kind.paired && e.BaselineFrom != "" && alphaNode == nil {
			e.Alpha = DefaultAlpha
		}
		out = append(out, e)
	}
	if n.Kind == yaml.SequenceNode {
		d.Items(n, what, func(i int, item *yaml.Node) { one(item, fmt.Sprintf("%s[%d]", what, i)) })
	} else {
		one(n, what)
	}
	return out
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
