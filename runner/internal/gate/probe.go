package gate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// A bisect build tests one vLLM commit of a regressed recipe. It is judged
// as the night that found the regression judged tonight: the same metric,
// the same detector with the same settings, against the nights up to the
// last good one (the good regime the change point ended). A build that
// cannot say (its run failed, ran another image, or could not be checked)
// is inconclusive, never good or bad.

// ErrInconclusive marks a bisect build that cannot be judged.
var ErrInconclusive = errors.New("inconclusive")

// Probe is a judged bisect build.
type Probe struct {
	// Bad: the detector flags the build's value against the good regime.
	Bad bool
	// Value is the median of the build's repetitions.
	Value float64
	// Why is the detector's reason, for people.
	Why string
}

// goodRegime is the series the detector judged, cut after its last good
// night, with the settings it judged by; nil when there is no good night.
func goodRegime(s series, d detect.Decision, m workloads.RegressionMetric) *summary.Regime {
	n := d.LastGood + 1
	if n <= 0 || n > len(s.values) {
		return nil
	}
	r := &summary.Regime{Nights: slices.Clone(s.values[:n]), HigherIsBetter: m.HigherIsBetter, FloorPct: m.MaxDropPct}
	for _, k := range s.known {
		if k < n {
			r.Known = append(r.Known, k)
		}
	}
	return r
}

// JudgeProbe judges sum, a bisect build's run of the recipe on commit,
// against the good regime r on subject's metric. The error wraps
// ErrInconclusive when the build cannot say good or bad.
func JudgeProbe(r summary.Regime, sum summary.Summary, commit, subject, metric string) (Probe, error) {
	inconclusive := func(format string, a ...any) (Probe, error) {
		return Probe{}, fmt.Errorf("%w: %s", ErrInconclusive, fmt.Sprintf(format, a...))
	}
	switch {
	case sum.Verdict == summary.VerdictError:
		why := "the run could not finish"
		f := sum.Failure
		if f != nil && f.Class != "" {
			why += fmt.Sprintf(" (%s: %s)", f.Class, f.Signature)
		}
		switch {
		case f != nil && f.Line != "":
			why += ": " + f.Line // the failed process's own words
		case len(sum.Problems) > 0:
			why += ": " + firstLine(sum.Problems[0])
		}
		return inconclusive("%s", why)
	case sum.Attached != "":
		return inconclusive("it measured a server it did not start (%s)", sum.Attached)
	case sum.VLLMCommit == "":
		return inconclusive("the run names no vLLM commit; %s was asked for", commit)
	case !strings.HasPrefix(sum.VLLMCommit, commit) && !strings.HasPrefix(commit, sum.VLLMCommit):
		return inconclusive("the run measured vLLM %s, not %s", sum.VLLMCommit, commit)
	}
	if sum.Verdict == summary.VerdictUnverified {
		// Its own regression gates compare with the latest nights, which
		// do not judge a bisect build; any other unchecked gate does.
		for _, g := range sum.Gates {
			if (g.Verdict == summary.VerdictUnverified || g.Verdict == summary.VerdictNoBaseline) && g.Kind != summary.GateRegression {
				return inconclusive("unverified: %s", g.Message)
			}
		}
	}
	run := benchRun(&sum, subject)
	v, why := benchValue(run, metric)
	if why != "" {
		return inconclusive("%s %s not measured: %s", subject, metric, why)
	}
	tonight := []float64{v}
	if reps := run.RepetitionValues[metric]; len(reps) > 1 {
		tonight = reps
	}
	cfg := detect.Config{HigherIsBetter: r.HigherIsBetter, MinEffectPct: r.FloorPct, Known: r.Known, OneShot: true}
	d, err := JudgeTonight(r.Nights, tonight, run.Reruns, cfg)
	if err != nil {
		return inconclusive("%s %s = %s cannot be judged: %v", subject, metric, numfmt.Sig(v, 4), err)
	}
	if d.Status == detect.StatusInsufficientHistory {
		return inconclusive("%s %s = %s: %s", subject, metric, numfmt.Sig(v, 4), d.Why)
	}
	return Probe{Bad: d.Flagged, Value: d.Tonight, Why: d.Why}, nil
}

// CheckRegime says whether r can judge a bisect build at all, before any
// is started: the detector must find enough nights in it to estimate their
// noise, as JudgeProbe will ask of it.
func CheckRegime(r summary.Regime) error {
	if len(r.Nights) == 0 {
		return fmt.Errorf("%w: the good regime has no nights", ErrInconclusive)
	}
	cfg := detect.Config{HigherIsBetter: r.HigherIsBetter, MinEffectPct: r.FloorPct, Known: r.Known, OneShot: true}
	d, err := detect.Detect(r.Nights, r.Nights[len(r.Nights)-1:], cfg)
	if err != nil {
		return fmt.Errorf("%w: the good regime cannot be judged by: %v", ErrInconclusive, err)
	}
	if d.Status == detect.StatusInsufficientHistory {
		return fmt.Errorf("%w: the good regime cannot judge a bisect build: %s", ErrInconclusive, d.Why)
	}
	return nil
}
