package gate

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// pastValue is one past night's value of a metric.
type pastValue struct {
	value float64
	reps  int // repetitions value is the median of
	ref   summary.NightRef
	fp    *summary.Fingerprint
	at    time.Time
	// flagged: that night's regression gate on the metric failed;
	// judged: it recorded a verdict on the metric at all; accepted: it
	// was judged with a regression accepted (regression.accept).
	flagged, judged, accepted bool
	// det is the night's detector reading of the metric, nil when it
	// recorded none: it says whether the night was an unconfirmed spike
	// and hands on a regression still open.
	det *summary.Detector
}

// series are a metric's past nights, oldest first, with the known change
// points in them: where the recipe's fingerprint changed and where an
// accepted regression's level begins.
type series struct {
	values []float64
	past   []pastValue // oldest first
	known  []int
	notes  []string
	// flagged are the nights whose gate flagged the metric; nil when no
	// night recorded a verdict on it. unconfirmed are the nights it
	// judged unconfirmed spikes.
	flagged, unconfirmed []int
	// accepting: an accepted level of the metric holds tonight.
	accepting bool
}

func seriesOf(past []pastValue, sum *summary.Summary, accept *workloads.Accept, m workloads.RegressionMetric, tonightBuild int, now time.Time) series {
	var s series
	for i := len(past) - 1; i >= 0; i-- {
		if past[i].judged && s.flagged == nil {
			s.flagged = []int{} // verdicts known, if none flagged
		}
		if past[i].flagged {
			s.flagged = append(s.flagged, len(s.past))
		}
		if past[i].det != nil && past[i].det.Unconfirmed {
			s.unconfirmed = append(s.unconfirmed, len(s.past))
		}
		s.past = append(s.past, past[i])
		s.values = append(s.values, past[i].value)
	}
	for i := 1; i < len(s.past); i++ {
		a, b := s.past[i-1].fp, s.past[i].fp
		if a != nil && b != nil && a.Hash != b.Hash {
			s.known = append(s.known, i)
			s.notes = append(s.notes, fmt.Sprintf("recipe changed at #%d (%s)", s.past[i].ref.Build, strings.Join(b.Changed(a), ", ")))
		}
	}
	if n := len(s.past); n > 0 && sum.Fingerprint != nil && s.past[n-1].fp != nil && s.past[n-1].fp.Hash != sum.Fingerprint.Hash {
		s.notes = append(s.notes, fmt.Sprintf("recipe changed tonight (%s): judged against the nights of the old recipe, the latest #%d at %s",
			strings.Join(sum.Fingerprint.Changed(s.past[n-1].fp), ", "), s.past[n-1].ref.Build, numfmt.Sig(s.past[n-1].value, 4)))
	}
	if level, named := accept.Level(m.Metric); named {
		after := func(p pastValue) bool {
			if accept.Build > 0 {
				return p.ref.Build >= accept.Build
			}
			return !p.at.IsZero() && !p.at.Before(accept.Date)
		}
		i := slices.IndexFunc(s.past, after)
		tonightAccepted := accept.Build > 0 && tonightBuild >= accept.Build || accept.Build == 0 && !now.Before(accept.Date)
		if i >= 0 || tonightAccepted {
			s.accepting = true
			cut := i
			if i < 0 {
				cut = len(s.past)
			} else {
				// Nights of the accepted level flagged before the
				// acceptance were flagged for the regression now
				// accepted: settled.
				s.flagged = slices.DeleteFunc(s.flagged, func(j int) bool { return j >= i && !s.past[j].accepted })
			}
			// The nights before the accepted level count at that level:
			// the accepted worsening is no regression, anything beyond it
			// is judged as usual, on the first night of the level too.
			worse := 1 + level/100
			if m.HigherIsBetter {
				worse = 1 - level/100
			}
			for j := range cut {
				s.values[j] *= worse
			}
			if cut > 0 {
				first := "tonight"
				if i >= 0 {
					first = "#" + strconv.Itoa(s.past[i].ref.Build)
				}
				s.notes = append(s.notes, fmt.Sprintf("regression of %s accepted since %s (%s): up to %s%% worse from %s on, so the %d night(s) before count %s%% worse",
					m.Metric, accept.Since, accept.Reason, numfmt.Exact(level), first, cut, numfmt.Exact(level)))
			}
		}
	}
	slices.Sort(s.known)
	return s
}

// pastValues reads one metric of one run out of every night's summary,
// newest first; nights without a positive finite value count as missing.
// A recipe change is a known change point in one series, except for a
// run whose own shape changed (its line, by key, in tonight's fingerprint
// differs from the night's): the nights before measured another
// workload, and are left out, as note says.
func pastValues(r baseline.Nights, run, metric, key string, tonight *summary.Fingerprint) (out []pastValue, note string) {
	line := benchLine(tonight, key)
	for _, n := range r.Nights {
		if old := benchLine(n.Summary.Fingerprint, key); line != "" && old != "" && old != line {
			note = fmt.Sprintf("the bench config of %s changed after #%d: the nights before measured another workload and are not compared", run, n.BuildNumber)
			break
		}
		for _, b := range nightRuns(n.Summary, run) {
			if b.Name != run || b.Status != summary.StatusOK {
				continue
			}
			if v, ok := b.Metrics[metric]; ok && v > 0 && !math.IsInf(v, 1) {
				flagged, judged, accepted, det := verdictOn(n.Summary, run, metric)
				out = append(out, pastValue{v, max(1, len(b.RepetitionValues[metric])), summary.NightRef{Build: n.BuildNumber, Value: v,
					ImageDigest: n.Summary.ImageDigest, VLLMCommit: n.Summary.VLLMCommit}, n.Summary.Fingerprint, n.CreatedAt,
					flagged, judged, accepted, det})
			}
			break
		}
	}
	return out, note
}

// shapeKey names a run's line in a fingerprint: a bench run's name, an
// aiperf point's config.
func shapeKey(run *summary.BenchRun) string {
	if run.Backend == "aiperf" {
		return run.Config
	}
	return run.Name
}

// benchLine is the fingerprint's line for key's shape, "" when the
// fingerprint has none. How many repetitions a night runs is left out:
// more of them measure the same workload more often.
func benchLine(fp *summary.Fingerprint, key string) string {
	if fp == nil || key == "" {
		return ""
	}
	for _, l := range fp.Parts.Bench {
		if strings.HasPrefix(l, key+" ") {
			return repsRE.ReplaceAllString(l, "")
		}
	}
	return ""
}

// repsRE is the repetitions field of a bench run's fingerprint line.
var repsRE = regexp.MustCompile(` reps=[0-9]+`)

// verdictOn says whether a night's regression gate on a run's metric
// failed (the detector flagged it), whether it passed or failed at all,
// whether a regression was accepted when it was judged, and what its
// detector read.
func verdictOn(s summary.Summary, run, metric string) (flagged, judged, accepted bool, det *summary.Detector) {
	for _, g := range s.Gates {
		if g.Kind != summary.GateRegression || g.Subject != run || g.Metric != metric {
			continue
		}
		accepted = g.Detector != nil && g.Detector.Accepted != ""
		switch g.Verdict {
		case summary.VerdictFail:
			return true, true, accepted, g.Detector
		case summary.VerdictPass:
			return false, true, accepted, g.Detector
		}
	}
	return false, false, false, nil
}

// carriedOf is the open regression the newest judged night of s handed
// on, with the build it began on (carry.Index is -1 when that night has
// left the history); nil when none is open.
func carriedOf(s series) (*detect.Carried, int) {
	for i := len(s.past) - 1; i >= 0; i-- {
		p := s.past[i]
		if !p.judged {
			continue
		}
		d := p.det
		if d == nil || !(d.OpenLevel > 0) || math.IsInf(d.OpenLevel, 0) {
			return nil, 0
		}
		if s.accepting && !p.accepted {
			// Judged before the regression was accepted: the one it
			// carried is the one accepted, settled.
			return nil, 0
		}
		c := &detect.Carried{Index: -1, Level: math.Log(d.OpenLevel), WorsePct: d.OpenWorsePct, Passed: d.OpenPassed, Held: d.OpenHeld, P: d.OpenP,
			LevelNights: d.OpenLevelNights}
		if j := slices.IndexFunc(s.past, func(p pastValue) bool { return p.ref.Build == d.OpenSince }); j >= 0 {
			c.Index = j
		}
		return c, d.OpenSince
	}
	return nil, 0
}

// pastReps is how many repetitions the past nights' values are typically
// the median of: tonight's runs beyond that many narrow its spread.
func pastReps(past []pastValue) int {
	if len(past) == 0 {
		return 1
	}
	n := make([]int, len(past))
	for i, p := range past {
		n[i] = p.reps
	}
	slices.Sort(n)
	return n[len(n)/2]
}

func tonightRef(sum *summary.Summary, v float64) summary.NightRef {
	ref := summary.NightRef{Tonight: true, Value: v, ImageDigest: sum.ImageDigest, VLLMCommit: sum.VLLMCommit}
	if sum.Buildkite != nil {
		ref.Build, _ = strconv.Atoi(sum.Buildkite.BuildNumber)
	}
	return ref
}
