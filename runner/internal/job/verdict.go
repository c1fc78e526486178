package job

import (
	"context"
	"fmt"

	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// verdict judges the run (gate.JudgeRun): a cancel is an error besides
// what the phases and gates say.
func (j *Job) verdict(ctx context.Context) gate.Judgement {
	canceled := ""
	if ctx.Err() != nil {
		canceled = context.Cause(ctx).Error()
	}
	return gate.JudgeRun(j.sum, canceled)
}

// finish prints the closing lines: the verdict, and every problem and
// failed gate with its reason, so the end of the log says what went wrong.
func (j *Job) finish(judged gate.Judgement) {
	var lines []string
	// What happened first leads: a server that died took down what
	// failed after it.
	if j.sum.Verdict != summary.VerdictPass && j.serverExit != "" {
		lines = append(lines, "server exited during the run: "+j.serverExit)
	}
	lines = append(lines, j.sum.Problems...)
	for _, g := range j.sum.Gates {
		if g.Verdict == summary.VerdictFail {
			lines = append(lines, "gate failed: "+g.Message)
		}
	}
	if p := j.sum.Phase(summary.PhasePublish); p != nil && p.Status == summary.StatusFailed {
		lines = append(lines, "publish failed: "+firstLine(p.Error))
	}
	switch j.sum.Verdict {
	case summary.VerdictPass:
		fmt.Fprintf(j.log, "+++ :white_check_mark: %s passed\n", j.res.Recipe.Name)
		return
	case summary.VerdictUnverified:
		fmt.Fprintf(j.log, "+++ :warning: %s: unverified (what was measured passed; what could not be checked follows)\n", j.res.Recipe.Name)
	case summary.VerdictFail:
		if judged.RegressionOnly {
			fmt.Fprintf(j.log, "+++ :warning: %s: regressed (soft-failed: the build's report fails the build unless its false-alarm budget releases it)\n", j.res.Recipe.Name)
			break
		}
		fmt.Fprintf(j.log, "+++ :x: %s: %s\n", j.res.Recipe.Name, j.sum.Verdict)
	default:
		if j.sum.Canceled != "" {
			// A cancel is what a person did, not what the run found.
			fmt.Fprintf(j.log, "+++ :x: %s: %s: canceled (%s)\n", j.res.Recipe.Name, j.sum.Verdict, j.sum.Canceled)
			break
		}
		fmt.Fprintf(j.log, "+++ :x: %s: %s\n", j.res.Recipe.Name, j.sum.Verdict)
	}
	for _, l := range lines {
		fmt.Fprintf(j.log, "  %s\n", l)
	}
}
