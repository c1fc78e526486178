package workloads

import (
	"regexp"
	"slices"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/benchkite/benchkite/internal/strictyaml"
)

// Accept records that a regression was reviewed and accepted: from the
// night Since names on, each metric it names may be up to its level worse
// than the nights before; a metric it does not name, and a worsening
// beyond the level, are judged as usual. It is a recipe change, reviewed
// like any other, and the gates show it.
type Accept struct {
	// Since is a build number or a date (YYYY-MM-DD, UTC): the first
	// night of the accepted level.
	Since string
	// Build is Since as a build number, 0 when it is a date; Date is Since
	// as a date, zero when it is a build.
	Build  int
	Date   time.Time
	Reason string
	// Metrics are the accepted levels: how many percent worse than
	// before each named metric may be, by metric.
	Metrics map[string]float64
}

// Level is the accepted worsening of metric, in percent, and whether the
// acceptance names it.
func (a *Accept) Level(metric string) (float64, bool) {
	if a == nil {
		return 0, false
	}
	pct, ok := a.Metrics[metric]
	return pct, ok
}

var buildRE = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)

// decodeAccept reads regression.accept: {since, reason, metrics}, all
// required; metrics maps each accepted metric to the percent worse
// accepted, so that accepting one metric's small drop never excuses
// another metric or a larger drop.
func (l *loader) decodeAccept(n *yaml.Node, what string) (a *Accept, metricNodes map[string]*yaml.Node) {
	d := l.d
	a = &Accept{}
	var sinceSet, reasonSet bool
	d.Fields(n, what, []strictyaml.Field{
		{Name: "since", Decode: func(_, v *yaml.Node) {
			// An unquoted date or number is what people write; YAML
			// tags them, so take the text.
			s, ok := v.Value, v.Kind == yaml.ScalarNode && (v.Tag == "!!timestamp" || v.Tag == "!!int")
			if !ok {
				if s, ok = d.String(v, what+".since"); !ok {
					return
				}
			}
			sinceSet = true
			a.Since = s
			if buildRE.MatchString(s) {
				a.Build, _ = strconv.Atoi(s)
				return
			}
			t, err := time.Parse(time.DateOnly, s)
			if err != nil {
				d.Errorf(v, "%s.since must be a build number or a date (YYYY-MM-DD), got %q", what, s)
				return
			}
			a.Date = t
		}},
		{Name: "reason", Decode: func(_, v *yaml.Node) {
			if s, ok := d.String(v, what+".reason"); ok {
				if s == "" {
					d.Errorf(v, "%s.reason is empty: say why the regression is accepted", what)
					return
				}
				a.Reason, reasonSet = s, true
			}
		}},
		{Name: "metrics", Decode: func(_, v *yaml.Node) {
			a.Metrics, metricNodes = map[string]float64{}, map[string]*yaml.Node{}
			d.Pairs(v, what+".metrics", func(k, pv *yaml.Node) {
				pct, ok := d.Float(pv, what+".metrics."+k.Value, 0, 100)
				if !ok {
					return
				}
				if pct <= 0 || pct >= 100 {
					d.Errorf(pv, "%s.metrics.%s must be above 0 and below 100 (the percent worse accepted), got %g", what, k.Value, pct)
					return
				}
				a.Metrics[k.Value], metricNodes[k.Value] = pct, k
			})
		}},
	})
	if n.Kind == yaml.MappingNode {
		if metricNodes == nil {
			d.Errorf(n, "%s needs metrics: each accepted metric and how many percent worse it may be (metrics: {output_throughput: 3})", what)
		}
		if !sinceSet {
			d.Errorf(n, "%s needs since (the first build or date of the accepted level)", what)
		}
		if !reasonSet {
			d.Errorf(n, "%s needs reason", what)
		}
	}
	return a, metricNodes
}

// checkAccept reports accepted metrics the regression does not judge: an
// acceptance of them would accept nothing.
func (l *loader) checkAccept(r *Regression, what string, metricNodes map[string]*yaml.Node) {
	for metric, node := range metricNodes {
		if !slices.ContainsFunc(r.Metrics, func(m RegressionMetric) bool { return m.Metric == metric }) {
			l.d.Errorf(node, "%s.accept.metrics: %q is not a metric this regression judges", what, metric)
		}
	}
}
