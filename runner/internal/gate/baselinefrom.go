package gate

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// BaselineFromNights is how many of another recipe's nights a
// baseline_from gate looks through for one that ran tonight's image.
const BaselineFromNights = contract.TrendNights

// otherRecipeScore reads a task metric from another recipe's latest
// passing nightly that ran the same model on the same image digest as
// tonight, else from its latest passing nightly, saying that the images
// differ. (The report step compares per question when both recipes ran
// in the same build; a GPU job has only the other recipe's summaries.)
func (g Gater) otherRecipeScore(ctx context.Context, sum *summary.Summary, recipe, task, metric string) (value float64, source, note string, night baseline.Past, err error) {
	r, err := g.History.Last(ctx, recipe, BaselineFromNights)
	if err != nil {
		return 0, "", "", night, err
	}
	passing := r.Passing()
	if len(passing) == 0 {
		return 0, "", "", night, fmt.Errorf("%w: no passing nightly of %s among its last %d", baseline.ErrNoBaseline, recipe, len(r.Nights))
	}
	n := passing[0]
	if sum.ImageDigest != "" {
		same := slices.IndexFunc(passing, func(p baseline.Past) bool {
			return p.Summary.ImageDigest == sum.ImageDigest && p.Summary.Model == sum.Model
		})
		if same >= 0 {
			n = passing[same]
		} else {
			note = fmt.Sprintf("; the images differ (tonight %s, #%d %s): a change may be the image's, not speculation's", sum.ImageDigest, n.BuildNumber, orUnpinned(n.Summary.ImageDigest))
		}
	}
	for _, a := range n.Summary.Accuracy {
		if a.Task == task && a.Status == summary.StatusOK {
			if v, ok := a.Metrics[metric]; ok {
				return v, fmt.Sprintf("%s #%d", recipe, n.BuildNumber), note, n, nil
			}
		}
	}
	return 0, "", "", n, fmt.Errorf("%w: %s #%d has no %s %s", baseline.ErrNoBaseline, recipe, n.BuildNumber, task, metric)
}

// pairedTest compares tonight's per-question outcomes of the task entry
// (the compact file the job wrote from lm_eval's samples) with those the
// history step kept of night. It returns the comparison; or why there is
// none and whether that leaves the gate unverified: a night that kept no
// outcomes leaves the means to decide, but a file that is there and
// cannot be read, or tonight's missing, is a check that could not be
// made, never a quiet fall-back to the means.
func (g Gater) pairedTest(ctx context.Context, night baseline.Past, e workloads.Expectation, task, entry, note string) (*summary.Paired, string, bool) {
	against := fmt.Sprintf("%s #%d", e.BaselineFrom, night.BuildNumber)
	stored := outcomesOf(night, task)
	if stored == nil {
		return nil, fmt.Sprintf("the build's history holds no per-question outcomes of %s %s", against, task), false
	}
	if stored.Missing != "" {
		return nil, fmt.Sprintf("%s: no per-question outcomes: %s", against, stored.Missing), strings.Contains(stored.Missing, "could not")
	}
	right, err := stored.Right(e.Metric)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", against, err), true
	}
	if g.ResultsDir == "" {
		return nil, "tonight's results directory is not known", true
	}
	tonight, err := baseline.ReadOutcomesFile(filepath.Join(g.ResultsDir, entry, baseline.OutcomesFile))
	if err != nil {
		return nil, fmt.Sprintf("tonight's per-question outcomes: %v", err), true
	}
	metric, filter, _ := strings.Cut(e.Metric, ",")
	minAgree, agreeNote := g.expectedAgreement(ctx, e.BaselineFrom, task, e.Metric)
	r, err := paired.CompareOutcomes(paired.Outcomes{Source: against, Right: right, ByHash: stored.ByHash()}, tonight.Samples(),
		paired.Options{Metric: metric, Filter: filter, Alpha: e.Alpha, MinAgreement: minAgree, MinPairs: g.MinPairs})
	if err != nil {
		return nil, err.Error(), true
	}
	return &summary.Paired{Against: against, Pairs: r.Pairs, Agreement: r.OutcomeAgreement, B: r.B, C: r.C, P: r.P,
		Alpha: r.Alpha, Delta: r.Delta, Fail: r.Fail, Unverified: r.Unverified, Why: r.Why + agreeNote, Note: strings.TrimPrefix(note, "; ")}, "", false
}

func outcomesOf(night baseline.Past, task string) *baseline.Outcomes {
	for i := range night.Outcomes {
		if night.Outcomes[i].Task == task {
			return &night.Outcomes[i]
		}
	}
	return nil
}

// expectedAgreement is the share of questions the run without
// speculation scores alike on two of its own nights (greedy decoding is
// not bit-exact across nights), less three standard errors: the least
// agreement speculation must show. Without two such nights it is 0 (not
// gated) and the note says so.
func (g Gater) expectedAgreement(ctx context.Context, recipe, task, metric string) (float64, string) {
	r, err := g.History.Last(ctx, recipe, BaselineFromNights)
	var outs []map[string]bool
	if err == nil {
		for _, n := range r.Passing() {
			if o := outcomesOf(n, task); o != nil && !o.ByHash() {
				if right, err := o.Right(metric); err == nil {
					outs = append(outs, right)
				}
			}
		}
	}
	if len(outs) < 2 {
		return 0, "; agreement not gated: fewer than two nights of " + recipe + " with per-question outcomes"
	}
	same, n := 0, 0
	for k, v := range outs[0] {
		if w, ok := outs[1][k]; ok {
			n++
			if v == w {
				same++
			}
		}
	}
	if n == 0 {
		return 0, "; agreement not gated: two nights of " + recipe + " share no question"
	}
	p := float64(same) / float64(n)
	return max(0, p-3*math.Sqrt(p*(1-p)/float64(n))), fmt.Sprintf("; agreement gated at %.1f%% (%s agrees with itself on %.1f%% of %d questions across nights)", max(0, p-3*math.Sqrt(p*(1-p)/float64(n)))*100, recipe, p*100, n)
}

func orUnpinned(digest string) string {
	if digest == "" {
		return "an unpinned image"
	}
	return digest
}
