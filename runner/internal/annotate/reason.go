package annotate

import (
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// failedPhase is the first phase that failed or was canceled: the one the
// verdict names. Phases that did not run after it are its consequence.
func failedPhase(s summary.Summary) *summary.Phase {
	for i, p := range s.Phases {
		if (p.Status == summary.StatusFailed || p.Status == summary.StatusCanceled) && !gatesSayIt(s, p) {
			return &s.Phases[i]
		}
	}
	// A server lost between phases fails none: the first phase it kept
	// from running says why.
	for i, p := range s.Phases {
		if p.Status == summary.StatusNotRun && strings.TrimSpace(p.Error) != "" {
			return &s.Phases[i]
		}
	}
	return nil
}

// gatesSayIt is true for the gate phase of a run whose gates failed: the
// failed gates are the failure, told with their numbers.
func gatesSayIt(s summary.Summary, p summary.Phase) bool {
	if p.Name != summary.PhaseGate || p.Status != summary.StatusFailed {
		return false
	}
	for _, g := range s.Gates {
		if g.Verdict == summary.VerdictFail {
			return true
		}
	}
	return false
}

// CauseLine is what a failed phase says in one line: its cause when the
// runner found one, else its error, clipped.
func CauseLine(p summary.Phase) string {
	c := strings.TrimSpace(p.Cause)
	if c == "" {
		c = strings.TrimSpace(p.Error)
	}
	if c == "" {
		return p.Status
	}
	return Clip(c, 240)
}

// Reason is the verdict's reason in one line of Markdown: the failing
// phase and its cause, the first failed gate with its numbers, or what
// could not be checked.
func Reason(s summary.Summary) string {
	var failed, unchecked []summary.GateResult
	passed := 0
	for _, g := range s.Gates {
		switch g.Verdict {
		case summary.VerdictFail:
			failed = append(failed, g)
		case summary.VerdictNoBaseline, summary.VerdictUnverified:
			unchecked = append(unchecked, g)
		case summary.VerdictPass:
			passed++
		}
	}
	more := func(n int, what string) string {
		if n <= 0 {
			return ""
		}
		return fmt.Sprintf(" (and %s)", plural(n, "more "+what))
	}
	if p := failedPhase(s); p != nil && s.Verdict != summary.VerdictPass {
		return fmt.Sprintf("**%s** %s: %s", Text(p.Name), Text(p.Status), Text(CauseLine(*p)))
	}
	switch {
	case len(failed) > 0:
		return gateReason(s, failed[0]) + more(len(failed)-1, "failed gate")
	case s.Verdict == summary.VerdictError:
		for _, g := range s.Gates {
			if g.Verdict == summary.VerdictError {
				return "**gate** error: " + Text(Clip(g.Message, 240))
			}
		}
		if len(s.Problems) > 0 {
			return Text(Clip(s.Problems[0], 240)) + more(len(s.Problems)-1, "problem")
		}
		return "the run could not be judged"
	case len(unchecked) > 0:
		if cause := uncheckedCause(unchecked); cause != "" {
			var names []string
			for _, g := range unchecked {
				names = append(names, Text(g.Subject)+" "+InlineCode(g.Metric))
			}
			return fmt.Sprintf("%s could not be made (%s): %s", plural(len(unchecked), "check"), strings.Join(names, ", "), Text(Clip(cause, 240)))
		}
		return fmt.Sprintf("%s could not be made: %s%s", plural(len(unchecked), "check"), Text(Clip(unchecked[0].Message, 240)), more(len(unchecked)-1, "check"))
	case s.Verdict == summary.VerdictUnverified && len(s.Problems) > 0:
		return Text(Clip(s.Problems[0], 240))
	}
	return fmt.Sprintf("%s passed", plural(passed, "gate"))
}

// uncheckedCause is the one reason all unchecked gates share, or "".
func uncheckedCause(gates []summary.GateResult) string {
	var msgs []string
	for _, g := range gates {
		msgs = append(msgs, g.Message)
	}
	return commonCause(msgs)
}

// gateReason is one failed gate in words: what, tonight against the
// baseline, by how much and the limit.
func gateReason(s summary.Summary, g summary.GateResult) string {
	what := Text(g.Subject) + " " + InlineCode(g.Metric)
	if g.Baseline == nil && g.Message != "" {
		return Text(Clip(g.Message, 240)) // an absolute bound says it best in its own words
	}
	if g.Value == nil {
		return what + ": " + Text(Clip(g.Message, 240))
	}
	u := UnitOf(g.Metric)
	// Throughput reads per GPU, as in the table below it.
	scale := 1.0
	if g.Metric == "output_throughput" && s.NumGPUs > 1 {
		scale = float64(s.NumGPUs)
		what = Text(g.Subject) + " output tok/s per GPU"
	}
	out := what + " " + Num(*g.Value/scale, u)
	if g.Baseline != nil {
		out += " vs " + Num(*g.Baseline/scale, u)
	}
	if g.DeltaPct != nil {
		out += " (" + Pct(*g.DeltaPct)
		if l := Limit(g); l != "" {
			out += ", limit " + l
		}
		out += ")"
	} else if l := Limit(g); l != "" {
		out += ", must be " + l
	}
	return out
}

// Limit is a judged gate's threshold in the words of its table cell: the
// detector's allowed worsening, or the gate's bound.
func Limit(g summary.GateResult) string {
	if d := g.Detector; d != nil && g.Baseline != nil {
		sign := "−"
		if strings.HasSuffix(g.Metric, "_ms") {
			sign = "+"
		}
		return sign + Thousands(d.ThresholdPct, 1) + " %"
	}
	// ">= 0.9250 (baseline 0.9400 - 0.015)": the number is the limit; the
	// details table has the rest, and the words of a bound not yet known.
	if bound, _, _ := strings.Cut(g.Bound, " ("); strings.HasPrefix(bound, ">") || strings.HasPrefix(bound, "<") {
		bound = strings.NewReplacer(">=", "≥", "<=", "≤").Replace(bound)
		return Text(Clip(bound, 80))
	}
	return ""
}

// commonCause is what every one of msgs ends with, when that is a cause
// worth saying once: "no baseline: no Buildkite API token …". "" when they
// differ.
func commonCause(msgs []string) string {
	if len(msgs) < 2 {
		return ""
	}
	suffix := msgs[0]
	for _, m := range msgs[1:] {
		i := 0
		for i < len(suffix) && i < len(m) && suffix[len(suffix)-1-i] == m[len(m)-1-i] {
			i++
		}
		suffix = suffix[len(suffix)-i:]
	}
	// Start at a clause: after "(" or ": ".
	if i := strings.IndexAny(suffix, "(:"); i >= 0 {
		suffix = suffix[i+1:]
	}
	// Drop the closing parentheses of clauses the suffix does not open.
	suffix = strings.TrimSpace(suffix)
	for strings.HasSuffix(suffix, ")") && strings.Count(suffix, ")") > strings.Count(suffix, "(") {
		suffix = strings.TrimSpace(strings.TrimSuffix(suffix, ")"))
	}
	if len(suffix) < 20 {
		return ""
	}
	return suffix
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
