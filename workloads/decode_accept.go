package workloads

import (
	"regexp"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/benchkite/benchkite/internal/strictyaml"
)

// Accept records that a regression was reviewed and accepted: from the
// night Since names on, the nights are the metric's new level. It is a
// recipe change, reviewed like any other, and the gates show it.
type Accept struct {
	// Since is a build number or a date (YYYY-MM-DD, UTC): the first
	// night of the accepted level.
	Since string
	// Build is Since as a build number, 0 when it is a date; Date is Since
	// as a date, zero when it is a build.
	Build  int
	Date   time.Time
	Reason string
}

var buildRE = regexp.MustCompile(`^[1-9][0-9]{0,9}$`)

// decodeAccept reads regression.accept: {since, reason}, both required.
func (l *loader) decodeAccept(n *yaml.Node, what string) *Accept {
	d := l.d
	a := &Accept{}
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
	})
	if n.Kind == yaml.MappingNode {
		if !sinceSet {
			d.Errorf(n, "%s needs since (the first build or date of the accepted level)", what)
		}
		if !reasonSet {
			d.Errorf(n, "%s needs reason", what)
		}
	}
	return a
}
