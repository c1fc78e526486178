package job

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/buildlog"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/rootcause"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// accuracyPhase runs an accuracy phase (lm_eval, bfcl) the recipe has on
// the server the bench used. It asks the server first, also after a bench
// that passed: one that died (or was replaced) since must not leave the
// phase looking skipped.
func (j *Job) accuracyPhase(ctx context.Context, name string, planned, ready bool, fn func(context.Context) error) {
	switch {
	case !planned:
	case j.cfg.BenchOnly || j.res.Recipe.BenchOnly:
		j.skip(name, "bench only")
	case ctx.Err() != nil:
		j.notRun(ctx, name, "canceled")
	case !ready:
		j.notRun(ctx, name, "server not serving")
	default:
		if why := j.notServing(ctx, true); why != "" {
			j.notRun(ctx, name, why)
			fmt.Fprintf(j.log, "runner: %s not run: %s\n", name, why)
			return
		}
		j.phase(ctx, name, fn)
	}
}

// phase runs fn in a collapsed log group and records it. A failed phase's
// group is expanded so the reason is on screen.
func (j *Job) phase(ctx context.Context, name string, fn func(context.Context) error) bool {
	buildlog.Section(j.log, phaseTitle(name))
	p := summary.Phase{Name: name, Status: summary.StatusOK, Started: j.now()}
	err := fn(ctx)
	p.Finished = j.now()
	if err != nil {
		p.Status = summary.StatusFailed
		if ctx.Err() != nil {
			p.Status = summary.StatusCanceled
		}
		p.Error = err.Error()
		// A server that died while the phase ran took it down: its death
		// comes first, before what the phase's own process said of it
		// (a bench's "connection refused").
		if c := j.serverCause(); c != "" {
			j.cause = c
		}
		p.Cause = j.cause
		fmt.Fprintf(j.log, "runner: %s %s: %v\n", name, p.Status, err)
		if p.Cause != "" {
			fmt.Fprintf(j.log, "runner: %s cause: %s\n", name, strings.ReplaceAll(p.Cause, "\n", " ⏎ "))
		}
		buildlog.ExpandPrevious(j.log)
	}
	j.cause = ""
	j.sum.Phases = append(j.sum.Phases, p)
	return err == nil
}

// noteCause keeps a failed process's last error lines for the phase's
// record; the first failure of a phase is kept.
func (j *Job) noteCause(tail *proc.Tail) {
	if j.cause == "" && tail != nil {
		j.cause = causeOf(tail)
	}
}

// causeOf is a failed process's cause: the innermost exception of its
// last traceback, else its last error lines (proc.Tail.Cause).
func causeOf(tail *proc.Tail) string {
	if c := rootcause.Of(tail.Lines()); c != "" {
		return c
	}
	return tail.Cause()
}

// skip records a phase this run does not plan (bench only, an attached
// server): not an error.
func (j *Job) skip(name, why string) {
	j.sum.Phases = append(j.sum.Phases, summary.Phase{Name: name, Status: summary.StatusSkipped, Error: why})
}

// notRun records a planned phase that an earlier failure or a cancel kept
// from running: the run cannot pass without it.
func (j *Job) notRun(ctx context.Context, name, why string) {
	status := summary.StatusNotRun
	if ctx.Err() != nil {
		status = summary.StatusCanceled
	}
	j.sum.Phases = append(j.sum.Phases, summary.Phase{Name: name, Status: status, Error: why})
}

func phaseTitle(name string) string {
	switch name {
	case summary.PhaseTools:
		return ":package: evaluation tools"
	case summary.PhaseServe:
		return ":rocket: serve"
	case summary.PhaseReady:
		return ":hourglass: wait for the server"
	case summary.PhaseBench:
		return ":stopwatch: vllm bench serve"
	case summary.PhaseAIPerf:
		return ":stopwatch: aiperf"
	case summary.PhaseLMEval:
		return ":dart: lm_eval"
	case summary.PhaseBFCL:
		return ":hammer_and_wrench: bfcl"
	case summary.PhaseGate:
		return ":vertical_traffic_light: gates"
	case PhaseBuild:
		return ":building_construction: docker build"
	case summary.PhasePublish:
		return ":package: publish"
	}
	return name
}

// notServing says why the server can take no more work, or "" when it
// can. After a failure it asks the server: one dying under load may not
// have exited yet, and work sent to it would only fail again, slowly.
// A server found not serving is not asked again.
func (j *Job) notServing(ctx context.Context, afterFailure bool) string {
	if j.unserving == "" && afterFailure && !j.serverGone() {
		if err := j.stillServing(ctx); err != nil && !j.serverGone() {
			j.unserving = "server not serving: " + err.Error()
		}
	}
	if j.serverGone() {
		return "server exited"
	}
	return j.unserving
}

// whileServing does every item in order: a failed one does not stop the
// next, but once the server has stopped serving the rest are skipped with
// the reason, and a cancel ends the loop. Errors are joined, each named.
func whileServing[T any](ctx context.Context, j *Job, items []T, name func(T) string, do func(T) error, skip func(T, string)) error {
	var errs []error
	for _, item := range items {
		if why := j.notServing(ctx, len(errs) > 0); why != "" {
			errs = append(errs, fmt.Errorf("%s; %s not run", why, name(item)))
			skip(item, why)
			continue
		}
		if err := do(item); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name(item), err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}
