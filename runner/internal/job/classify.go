package job

import (
	"github.com/benchkite/benchkite/runner/internal/classify"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// failure classifies the finished run. When the summary alone names no
// known message (a phase said only "server exited"), the server's last
// lines are read too: the engine writes its root cause there, not to us.
func (j *Job) failure() *summary.Failure {
	r := classify.Night(&j.sum)
	if r.Class != classify.ClassNone && r.Line == "" && j.sum.Verdict == summary.VerdictError && j.server != nil && j.server.tail != nil {
		if sig, line, ok := classify.Match(j.server.tail.Lines()); ok {
			r = classify.Result{Class: sig.Class, Signature: sig.Name, Line: line, Source: sig.Source, Phase: r.Phase}
		}
	}
	return r.Summary(j.res.Recipe.BlockedBy)
}
