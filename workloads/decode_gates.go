package workloads

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

func (l *loader) decodeAssertions(n *yaml.Node, what string) []Assertion {
	d := l.d
	var out []Assertion
	d.Pairs(n, what, func(k, v *yaml.Node) {
		if !metricRE.MatchString(k.Value) {
			d.Errorf(k, "%s: %q is not a result key", what, k.Value)
			return
		}
		l.metricRefs = append(l.metricRefs, metricRef{node: k, what: what, metric: k.Value, config: l.config})
		a := Assertion{Metric: k.Value}
		d.Fields(v, what+"."+k.Value, []strictyaml.Field{
			{Name: "min", Decode: func(_, v *yaml.Node) {
				a.Min = l.optFloat(v, what+"."+k.Value+".min", -math.MaxFloat64, math.MaxFloat64)
			}},
			{Name: "max", Decode: func(_, v *yaml.Node) {
				a.Max = l.optFloat(v, what+"."+k.Value+".max", -math.MaxFloat64, math.MaxFloat64)
			}},
		})
		if a.Min == nil && a.Max == nil {
			d.Errorf(v, "%s.%s needs min or max", what, k.Value)
			return
		}
		if a.Min != nil && a.Max != nil && *a.Min > *a.Max {
			d.Errorf(v, "%s.%s: min %g is above max %g", what, k.Value, *a.Min, *a.Max)
		}
		out = append(out, a)
	})
	return out
}

// DefaultRegressionNights is how many comparable past nights the
// regression detector looks at: `runner calibrate` measured its targets (at
// most 1 % false alarms per night, 90 % power for a step of three times the
// noise) with 30.
const DefaultRegressionNights = 30

// MinRegressionNights is the fewest nights a regression gate judges by when
// max_missing is not given: a young recipe is judged from its fifth night,
// with less power (see the README), rather than unverified for weeks.
const MinRegressionNights = 5

// minDetectorNights is the fewest nights the detector can estimate the
// noise from.
const minDetectorNights = 3

func (l *loader) decodeRegression(n *yaml.Node, what string) *Regression {
	d := l.d
	r := &Regression{Nights: DefaultRegressionNights, MaxMissing: -1}
	var acceptNodes map[string]*yaml.Node
	d.Fields(n, what, []strictyaml.Field{
		{Name: "nights", Decode: func(_, v *yaml.Node) { r.Nights, _ = d.Int(v, what+".nights", minDetectorNights, 50) }},
		{Name: "max_missing", Decode: func(_, v *yaml.Node) { r.MaxMissing, _ = d.Int(v, what+".max_missing", 0, 50) }},
		{Name: "accept", Decode: func(_, v *yaml.Node) { r.Accept, acceptNodes = l.decodeAccept(v, what+".accept") }},
		{Name: "rerun_on_alarm", Decode: func(_, v *yaml.Node) {
			if b, ok := d.Bool(v, what+".rerun_on_alarm"); ok {
				r.NoRerun = !b
			}
		}},
		{Name: "metrics", Decode: func(_, v *yaml.Node) {
			d.Pairs(v, what+".metrics", func(k, mv *yaml.Node) {
				m := RegressionMetric{Metric: k.Value}
				mwhat := what + ".metrics." + k.Value
				if !metricRE.MatchString(k.Value) {
					d.Errorf(k, "%s: %q is not a result key", what, k.Value)
					return
				}
				l.metricRefs = append(l.metricRefs, metricRef{node: k, what: what + ".metrics", metric: k.Value, config: l.config})
				var dirSet, dropSet bool
				d.Fields(mv, mwhat, []strictyaml.Field{
					{Name: "direction", Decode: func(_, v *yaml.Node) {
						if s, ok := d.String(v, mwhat+".direction"); ok {
							switch s {
							case "higher":
								m.HigherIsBetter, dirSet = true, true
							case "lower":
								m.HigherIsBetter, dirSet = false, true
							default:
								d.Errorf(v, "%s.direction must be higher or lower (which way is better), got %q", mwhat, s)
							}
						}
					}},
					{Name: "max_drop_pct", Decode: func(_, v *yaml.Node) { m.MaxDropPct, dropSet = d.Float(v, mwhat+".max_drop_pct", 0, 100) }},
				})
				if mv.Kind != yaml.MappingNode {
					return
				}
				if !dirSet {
					if hib, known := defaultDirection(k.Value); known {
						m.HigherIsBetter = hib
					} else {
						d.Errorf(mv, "%s needs direction (higher or lower is better)", mwhat)
					}
				}
				if !dropSet {
					d.Errorf(mv, "%s needs max_drop_pct", mwhat)
				}
				r.Metrics = append(r.Metrics, m)
			})
		}},
	})
	l.checkAccept(r, what, acceptNodes)
	if r.MaxMissing < 0 {
		r.MaxMissing = max(0, r.Nights-MinRegressionNights)
	}
	if r.Nights-r.MaxMissing < minDetectorNights && n.Kind == yaml.MappingNode {
		d.Errorf(n, "%s.max_missing (%d) must leave at least %d of the %d nights: the detector estimates the noise from them", what, r.MaxMissing, minDetectorNights, r.Nights)
	}
	return r
}

// checkMetricRefs reports assertion and regression keys that no result of
// their config holds: a gate on such a key could only be skipped.
func (l *loader) checkMetricRefs(r *Recipe) {
	if r.Bench == nil {
		return
	}
	spec := r.VLLM.Serve.Speculative != nil
	for _, ref := range l.metricRefs {
		configs := r.Bench.Configs
		if ref.config >= 0 {
			// Configs index as in the file only when none was dropped;
			// a dropped one is reported already.
			if len(configs) != l.benchItems || ref.config >= len(configs) {
				continue
			}
			configs = configs[ref.config : ref.config+1]
		}
		for _, c := range configs {
			keys := BenchResultKeys(&c, spec)
			if slices.Contains(keys, ref.metric) {
				continue
			}
			msg := fmt.Sprintf("%s: vllm bench serve writes no %q for config %s", ref.what, ref.metric, c.Name)
			if slices.Contains(benchSpecKeys, ref.metric) {
				msg += " (it is written only when serve_args configure speculative decoding)"
			} else if ref.metric == benchGoodputKey {
				msg += " (it is written only with --goodput)"
			} else if close := strictyaml.Closest(ref.metric, keys, 3); len(close) > 0 {
				msg += "; did you mean " + strings.Join(close, ", ") + "?"
			} else {
				msg += " (latency keys follow its --percentile-metrics and --metric-percentiles)"
			}
			l.d.Errorf(ref.node, "%s", msg)
			break
		}
	}
}

// defaultDirection knows which way is better for the usual bench keys.
func defaultDirection(metric string) (higherIsBetter, known bool) {
	switch {
	case strings.HasSuffix(metric, "_ms"):
		return false, true
	case strings.Contains(metric, "throughput"), strings.HasPrefix(metric, "spec_decode_acceptance"):
		return true, true
	}
	return false, false
}
