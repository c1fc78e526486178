package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// This file is the one place where gate results become verdicts: a
// recipe's verdict, problems, style and exit status from its own run
// (JudgeRun), and the build's verdict, rows, style, exit and bisect
// candidates from every summary of the build, the same-build comparisons
// and the false-alarm budget (JudgeBuild). Every other package reads
// what these return.
//
// A recipe's GPU step cannot see the other recipes of the night, so it
// cannot tell whether the build's budget keeps or releases its
// regression: a run whose only failed gates are regression gates exits
// contract.ExitRegressed, which its step soft-fails, and the report step
// decides. That step is the only one where a regression turns the build
// red.

// RowRegressed is a build row whose only failed gates are regression
// gates the budget keeps: slower, not wrong.
const RowRegressed = "regressed"

// Judgement is a recipe's verdict.
type Judgement struct {
	// Verdict is one of summary's run verdicts (pass, fail, error,
	// unverified).
	Verdict string
	// Problems say, one per line, what kept the run from pass besides
	// failed gates.
	Problems []string
	// RegressionOnly: the run failed, and only on regression gates.
	RegressionOnly bool
}

// flaggedKept keeps every regression its own gate flagged: a run judged
// alone.
func flaggedKept(summary.GateResult) bool { return true }

// JudgeRun is a recipe's verdict from its summary alone (phases, gates,
// the attached server): pass only when every planned phase ran and every
// gate produced a value and passed; error when something planned is
// missing; fail when a gate failed; unverified when everything measured
// passed but a check could not be made. canceled, when not empty, is why
// the run was stopped.
func JudgeRun(s summary.Summary, canceled string) Judgement {
	return judge(s, canceled, flaggedKept)
}

func judge(s summary.Summary, canceled string, kept func(summary.GateResult) bool) Judgement {
	var errs, unverified []string
	if canceled != "" {
		errs = append(errs, "canceled: "+canceled)
	}
	for _, p := range s.Phases {
		if p.Name == summary.PhasePublish || p.Name == summary.PhaseGate && p.Status == summary.StatusFailed {
			continue // a failed gate phase is the gates' verdict
		}
		switch p.Status {
		case summary.StatusFailed, summary.StatusNotRun, summary.StatusCanceled:
			line, _, _ := strings.Cut(p.Error, "\n")
			errs = append(errs, fmt.Sprintf("%s %s: %s", p.Name, p.Status, line))
		}
	}
	failed, regressionOnly := false, true
	for _, g := range s.Gates {
		switch g.Verdict {
		case summary.VerdictFail:
			if g.Kind == summary.GateRegression && !kept(g) {
				continue
			}
			failed = true
			regressionOnly = regressionOnly && g.Kind == summary.GateRegression
		case summary.VerdictError:
			errs = append(errs, "gate error: "+g.Message)
		case summary.VerdictNoBaseline, summary.VerdictUnverified:
			unverified = append(unverified, "not verified: "+g.Message)
		}
	}
	if s.Attached != "" && s.Buildkite != nil {
		// The job did not start what it measured: the image and flags
		// the build asked for are not known to be what answered.
		unverified = append(unverified, "not verified: attached to "+s.Attached+", a server this job did not start; its image and flags are unknown")
	}
	problems := append(errs, unverified...)
	switch {
	case len(errs) > 0:
		return Judgement{Verdict: summary.VerdictError, Problems: problems}
	case failed:
		return Judgement{Verdict: summary.VerdictFail, Problems: problems, RegressionOnly: regressionOnly}
	case len(unverified) > 0:
		return Judgement{Verdict: summary.VerdictUnverified, Problems: problems}
	}
	return Judgement{Verdict: summary.VerdictPass}
}

// Exit is the recipe step's exit status for a run that was not stopped
// by a signal: 0 for a pass, contract.ExitUnverified for an unverified
// run, contract.ExitRegressed for a failure on regression gates alone
// (both soft-failed by the step), 1 for anything else.
func (j Judgement) Exit() int {
	switch {
	case j.Verdict == summary.VerdictPass:
		return 0
	case j.Verdict == summary.VerdictUnverified:
		return contract.ExitUnverified
	case j.Verdict == summary.VerdictFail && j.RegressionOnly:
		return contract.ExitRegressed
	}
	return 1
}

// Style is the annotation style of a recipe's own annotation: success
// only for a pass; unverified, and a regression the build's report has
// yet to judge, are warnings, never green; fail and error are errors.
func (j Judgement) Style() string {
	switch {
	case j.Verdict == summary.VerdictPass:
		return "success"
	case j.Verdict == summary.VerdictUnverified, j.Verdict == summary.VerdictFail && j.RegressionOnly:
		return "warning"
	}
	return "error"
}

// Style is the annotation style of a recipe's stored summary.
func Style(s summary.Summary) string {
	j := JudgeRun(s, "")
	if s.Verdict != j.Verdict {
		// A summary the runner's rules no longer derive (a cancel
		// leaves no phase canceled, an older runner): its own word.
		j = Judgement{Verdict: s.Verdict}
	}
	return j.Style()
}

// Row is one recipe of the build as the build judges it.
type Row struct {
	Summary summary.Summary
	// Verdict is pass, regressed, fail, unverified or error.
	Verdict string
	// Released are the regression gates the budget released.
	Released []summary.GateResult
	// SameBuild is the same-build comparison that failed the recipe, nil
	// when none did.
	SameBuild *SameBuild
}

// Build is the verdict of one build over all its recipes.
type Build struct {
	// Rows are the recipes, worst first, then by name.
	Rows []Row
	// Style is the report annotation's style.
	Style string
	// Exit is the report step's exit status: 1 when a gate fails the
	// build (a failed gate, a regression the budget keeps, a failed
	// same-build comparison), else 0. A recipe that could not be judged
	// has failed its own step already.
	Exit int
	// Failing counts the recipes that fail the build on a gate;
	// SameBuildFailing the failed same-build comparisons.
	Failing, SameBuildFailing int
	// Same are the same-build comparisons judged with it.
	Same []SameBuild
	// Bisect are the regressions worth bisecting: kept, with a change
	// point between two known vLLM commits.
	Bisect []Bisect
}

// Bisect is a regression to bisect.
type Bisect struct {
	Summary summary.Summary
	Gate    summary.GateResult
}

// rowRank orders rows worst first.
var rowRank = map[string]int{summary.VerdictError: 0, summary.VerdictFail: 1, RowRegressed: 2, summary.VerdictUnverified: 3, summary.VerdictPass: 4}

// JudgeBuild folds every summary of the build, the same-build
// comparisons and the budget into the build's verdict.
func JudgeBuild(sums []summary.Summary, same []SameBuild, b Budget) Build {
	out := Build{Same: same}
	for _, s := range sums {
		r := judgeRow(s, b)
		for i, c := range same {
			if c.Recipe == s.Recipe && c.Verdict == summary.VerdictFail && rowRank[r.Verdict] > rowRank[summary.VerdictFail] {
				r.Verdict, r.SameBuild = summary.VerdictFail, &same[i]
			}
		}
		switch r.Verdict {
		case summary.VerdictFail, RowRegressed:
			out.Failing++
		}
		if r.Verdict == RowRegressed || r.Verdict == summary.VerdictFail {
			if g := bisectable(s, b); g != nil {
				out.Bisect = append(out.Bisect, Bisect{Summary: s, Gate: *g})
			}
		}
		out.Rows = append(out.Rows, r)
	}
	slices.SortStableFunc(out.Rows, func(x, y Row) int {
		if d := rowRank[x.Verdict] - rowRank[y.Verdict]; d != 0 {
			return d
		}
		return strings.Compare(x.Summary.Recipe, y.Summary.Recipe)
	})
	for _, c := range same {
		if c.Verdict == summary.VerdictFail {
			out.SameBuildFailing++
		}
	}
	if out.Failing > 0 || out.SameBuildFailing > 0 {
		out.Exit = 1
	}
	out.Style = buildStyle(out)
	return out
}

// judgeRow is one summary within the build's budget. Its stored verdict
// stands where the rules cannot derive it again (an error: a cancel, an
// older runner); a failure is judged again with the budget's word on each
// regression gate.
func judgeRow(s summary.Summary, b Budget) Row {
	r := Row{Summary: s}
	switch s.Verdict {
	case summary.VerdictPass, summary.VerdictUnverified:
		r.Verdict = s.Verdict
		return r
	case summary.VerdictFail:
	default: // error, or anything unknown
		r.Verdict = summary.VerdictError
		return r
	}
	kept := func(g summary.GateResult) bool { return b.Fails(s.Recipe, g) }
	j := judge(s, "", kept)
	for _, g := range s.Gates {
		if g.Kind == summary.GateRegression && g.Verdict == summary.VerdictFail && !kept(g) {
			r.Released = append(r.Released, g)
		}
	}
	switch {
	case j.Verdict == summary.VerdictFail && j.RegressionOnly:
		r.Verdict = RowRegressed
	case j.Verdict == summary.VerdictPass && len(r.Released) == 0:
		// Stored as failed, yet nothing fails it: keep its own word.
		r.Verdict = summary.VerdictFail
	default:
		r.Verdict = j.Verdict
	}
	if j.Verdict != s.Verdict && len(r.Released) > 0 {
		r.Summary.Problems = append(slices.Clone(j.Problems), fmt.Sprintf("%s within the build's false-alarm budget (was %s)", j.Verdict, s.Verdict))
		r.Summary.Verdict = j.Verdict
		if j.Verdict == summary.VerdictPass || j.Verdict == summary.VerdictUnverified {
			// The failure its step classed (perf) is one the budget
			// released: no red night.
			r.Summary.Failure = nil
		}
	}
	return r
}

// buildStyle is the report's style: an error when a gate fails the build
// (a failed gate, a kept regression, a failed same-build comparison), a
// warning when something else is not a pass (a recipe that could not be
// judged has failed its own step; or there is nothing to show), success
// otherwise.
func buildStyle(b Build) string {
	if len(b.Rows) == 0 {
		return "warning"
	}
	style := "success"
	for _, c := range b.Same {
		if c.Verdict == summary.VerdictFail {
			return "error"
		}
		if c.Verdict != summary.VerdictPass {
			style = "warning"
		}
	}
	for _, r := range b.Rows {
		switch r.Verdict {
		case summary.VerdictFail, RowRegressed:
			return "error"
		case summary.VerdictError, summary.VerdictUnverified:
			style = "warning"
		}
	}
	return style
}

// bisectable is s's kept regression gate with a change point between two
// known vLLM commits, nil when there is none.
func bisectable(s summary.Summary, b Budget) *summary.GateResult {
	for i, g := range s.Gates {
		cp := g.ChangePoint
		if g.Kind == summary.GateRegression && g.Verdict == summary.VerdictFail && b.Fails(s.Recipe, g) && cp != nil && cp.Found && cp.GoodRegime != nil &&
			cp.LastGood.VLLMCommit != "" && cp.FirstBad.VLLMCommit != "" && cp.LastGood.VLLMCommit != cp.FirstBad.VLLMCommit {
			return &s.Gates[i]
		}
	}
	return nil
}
