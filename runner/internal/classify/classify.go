// Package classify says why a night was red: each error or failure gets a
// class from the phase that failed and the tools' own error messages,
// with the log line that decided it.
package classify

import (
	"cmp"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Class is the kind of cause a red night has.
type Class string

// The classes, from the furthest from the code under test to the nearest.
const (
	ClassNone Class = ""
	// ClassInfra: the cluster, the node, the registry or the agent.
	ClassInfra Class = "infra"
	// ClassHarness: benchkite's own phases (tools install, runner errors).
	ClassHarness Class = "harness"
	// ClassVLLM: the engine died, ran out of memory, timed out starting,
	// or does not support the model or its quantization.
	ClassVLLM Class = "vllm"
	// ClassModel: the Hub refused or lacks the model, or its code failed.
	ClassModel Class = "model"
	// ClassAccuracy: an accuracy or BFCL gate failed.
	ClassAccuracy Class = "accuracy"
	// ClassPerf: a bench assertion or a regression gate failed.
	ClassPerf Class = "perf"
)

// Result is a night's class and what decided it.
type Result struct {
	Class Class `json:"class"`
	// Signature names the matching message, or the rule that decided
	// ("phase tools failed", "regression gate").
	Signature string `json:"signature"`
	// Line is the log line that matched, trimmed and capped; "" when a
	// rule decided.
	Line string `json:"line,omitempty"`
	// Source is where the matching message comes from.
	Source string `json:"source,omitempty"`
	// Phase is the phase that failed, when one did.
	Phase string `json:"phase,omitempty"`
	// ByRule: no known message decided, only the phase (Line may still
	// hold the failed process's own cause); a message found elsewhere
	// (the server's log) may still name the class.
	ByRule bool `json:"-"`
}

// maxLine caps a matching line kept in a Result.
const maxLine = 300

// Match finds the first signature, in table order, that matches one of
// lines. ok is false when none does.
func Match(lines []string) (sig Signature, line string, ok bool) {
	for _, s := range signatures {
		// The newest line that matches is the one nearest the failure.
		for i := len(lines) - 1; i >= 0; i-- {
			if s.Pattern.MatchString(lines[i]) {
				return s, capLine(lines[i]), true
			}
		}
	}
	return Signature{}, "", false
}

// Failure is one failed process or phase: where it failed, what the
// runner said of it, and the root cause the failed process gave.
type Failure struct {
	Phase string
	Lines []string
	// Cause is the phase's cause (summary.Phase.Cause): the innermost
	// exception of the process that died first, or its last error lines.
	Cause string
}

// Classify decides the class of one failure: a signature matching the
// cause wins, then one matching the other lines, else the phase decides
// (our own phases are harness; a server that never became ready is
// vllm). The line kept is the cause's whenever there is one: it is what
// a person points at ("See root cause above" is not).
func Classify(f Failure) Result {
	cause := splitLines(f.Cause)
	if sig, line, ok := Match(cause); ok {
		return Result{Class: sig.Class, Signature: sig.Name, Line: line, Source: sig.Source, Phase: f.Phase}
	}
	var root string
	if len(cause) > 0 {
		root = capLine(cause[0])
	}
	if sig, line, ok := Match(f.Lines); ok {
		return Result{Class: sig.Class, Signature: sig.Name, Line: cmp.Or(root, line), Source: sig.Source, Phase: f.Phase}
	}
	r := Result{Phase: f.Phase, ByRule: true, Line: root}
	switch f.Phase {
	case summary.PhaseServe, summary.PhaseReady:
		r.Class, r.Signature = ClassVLLM, "server did not start"
	case summary.PhaseTools:
		r.Class, r.Signature = ClassHarness, "tools install failed"
	case "":
		r.Class, r.Signature = ClassHarness, "runner error"
	default:
		r.Class, r.Signature = ClassHarness, "phase "+f.Phase+" failed"
	}
	return r
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// Night classifies a finished run from its summary: an error by the first
// failed phase and its messages, a failure by the gates that failed
// (accuracy before perf: a wrong answer matters more than a slow one). A
// pass, an unverified run, and a run canceled before anything failed
// have no class: someone chose to stop it.
func Night(s *summary.Summary) Result {
	switch s.Verdict {
	case summary.VerdictError:
		for _, p := range s.Phases {
			if p.Status == summary.StatusFailed {
				return Classify(Failure{Phase: p.Name, Lines: phaseLines(s, p), Cause: p.Cause})
			}
		}
		if s.Canceled != "" {
			return Result{Signature: "canceled"}
		}
		return Classify(Failure{Lines: s.Problems})
	case summary.VerdictFail:
		var perf *summary.GateResult
		for i, g := range s.Gates {
			if g.Verdict != summary.VerdictFail {
				continue
			}
			if g.Kind == summary.GateAccuracy {
				return Result{Class: ClassAccuracy, Signature: g.Kind + " gate"}
			}
			if perf == nil {
				perf = &s.Gates[i]
			}
		}
		if perf != nil {
			return Result{Class: ClassPerf, Signature: perf.Kind + " gate"}
		}
		// A failed run with no failed gate failed in a phase.
		for _, p := range s.Phases {
			if p.Status == summary.StatusFailed {
				return Classify(Failure{Phase: p.Name, Lines: phaseLines(s, p), Cause: p.Cause})
			}
		}
	}
	return Result{}
}

// phaseLines are the texts besides its cause that may tell why phase p
// failed: its error and the run's problems.
func phaseLines(s *summary.Summary, p summary.Phase) []string {
	var lines []string
	lines = append(lines, s.Problems...)
	lines = append(lines, strings.Split(p.Error, "\n")...)
	return lines
}

// Job classifies a recipe step's try from the state the Buildkite API
// gives its job and the agent's signal reason (signalReasons): an agent
// that vanished or was stopped, a job it refused or could not start, a
// pod the stack could not launch, a job that expired unscheduled, timed
// out or broke before the runner could write why, are infra. A canceled
// job has no class: someone chose to stop it.
func Job(state string, exitStatus *int, signalReason string) Result {
	sig := "job " + state
	if signalReason != "" && signalReason != "none" {
		sig += " (" + signalReason + ")"
	}
	if r, ok := signalReasons[signalReason]; ok {
		if r.class == ClassNone {
			return Result{Signature: sig}
		}
		return Result{Class: r.class, Signature: r.name + ": " + sig, Source: r.source}
	}
	switch {
	case exitStatus != nil && *exitStatus == -1:
		return Result{Class: ClassInfra, Signature: "agent lost: " + sig, Source: "Buildkite: exit status -1, the agent was lost or never ran the command"}
	case state == "expired", state == "timed_out", state == "broken":
		return Result{Class: ClassInfra, Signature: sig}
	case state == "canceled", state == "canceling":
		return Result{Signature: sig}
	}
	return Result{Class: ClassHarness, Signature: "no summary: " + sig}
}

// signalReasons are the agent's signal reasons (agent/run_job.go,
// SignalReason*), as the REST API's job signal_reason gives them.
var signalReasons = map[string]struct {
	class        Class
	name, source string
}{
	"agent_stop":         {ClassInfra, "agent stopped", "buildkite-agent: the agent was stopping (host shutdown, spot termination) and signalled the job"},
	"agent_refused":      {ClassInfra, "agent refused the job", "buildkite-agent: a failed pre-bootstrap hook or allow-list check"},
	"agent_incompatible": {ClassInfra, "agent incompatible", "Buildkite: the agent cannot run the job's requirements"},
	"signature_rejected": {ClassInfra, "job signature rejected", "buildkite-agent: the job's signature could not be verified"},
	"process_run_error":  {ClassInfra, "job process did not start", "buildkite-agent: the bootstrap process failed to run (resources, setup)"},
	"stack_error":        {ClassInfra, "stack could not start the job", "agent-stack-k8s: the pod could not be launched"},
	"cancel":             {ClassNone, "canceled", "buildkite-agent: the job was canceled"},
}

// Summary is r as summary.json carries it, naming blockedBy when the
// failure is of the kind a recipe's blocked_by points at (the engine or
// the model); nil when r has no class.
func (r Result) Summary(blockedBy []string) *summary.Failure {
	if r.Class == ClassNone {
		return nil
	}
	f := &summary.Failure{Class: string(r.Class), Signature: r.Signature, Line: r.Line, Source: r.Source, Phase: r.Phase}
	if len(blockedBy) > 0 && (r.Class == ClassVLLM || r.Class == ClassModel) {
		f.BlockedBy = strings.Join(blockedBy, ", ")
	}
	return f
}

func capLine(s string) string {
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > maxLine {
		return string(r[:maxLine-1]) + "…"
	}
	return s
}
