package job

import (
	"cmp"
	"fmt"

	"github.com/benchkite/benchkite/runner/internal/classify"
	"github.com/benchkite/benchkite/runner/internal/gputime"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// failure classifies the finished run. When the summary alone names no
// known message (a phase said only "server exited"), the server's last
// lines are read too: the engine writes its root cause there, not to us.
func (j *Job) failure() *summary.Failure {
	r := classify.Night(&j.sum)
	if r.Class != classify.ClassNone && r.ByRule && j.sum.Verdict == summary.VerdictError && j.server != nil && j.server.tail != nil {
		if sig, line, ok := classify.Match(j.server.tail.Lines()); ok {
			// The class from the log's known message; the line stays the
			// root cause when there is one ("See root cause above" is
			// not it).
			r = classify.Result{Class: sig.Class, Signature: sig.Name, Line: cmp.Or(r.Line, line), Source: sig.Source, Phase: r.Phase}
		}
	}
	return r.Summary(j.res.Recipe.BlockedBy)
}

// account records the run's GPU time, keeping what a skipped sweep saved,
// and says it in the log.
func (j *Job) account() {
	j.sum.GPUTime = gputime.Of(&j.sum, j.res.Profile.GPUHourPrice)
	for i := range j.sum.Bench {
		j.sum.Bench[i].PriceTokens(j.res.Profile.GPUHourPrice, j.res.Recipe.NumGPUs)
	}
	if g := j.sum.GPUTime; g != nil {
		g.Saved, g.BisectBudget = j.canarySaved, j.res.Profile.BisectGPUHours
		fmt.Fprintf(j.log, "runner: GPU time %.2f GPU-h on %d GPU(s)\n", g.Total/3600, g.GPUs)
	}
}
