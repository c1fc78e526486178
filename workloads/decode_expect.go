package workloads

import (
	"fmt"

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
		var alphaNode *yaml.Node
		fields := []strictyaml.Field{
			{Name: "min", Decode: func(_, v *yaml.Node) {
				bounded = true
				e.Min = l.optFloat(v, what+".min", 0, kind.max)
			}},
			{Name: "baseline", Decode: func(_, v *yaml.Node) {
				bounded = true
				e.Baseline = l.optFloat(v, what+".baseline", 0, kind.max)
			}},
			{Name: "tolerance", Decode: func(_, v *yaml.Node) {
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
