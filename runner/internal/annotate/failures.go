package annotate

import (
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// writeOtherFailures lists the failures the verdict line did not name:
// later failed phases, phases kept from running (with their reason when
// it is not the first failure's), gate errors, checks that could not be
// made, problems. Each once.
func writeOtherFailures(b *strings.Builder, s summary.Summary) {
	first := failedPhase(s)
	l := newFailureLines(first)
	l.addPhases(s, first)
	reason := Reason(s)
	l.addGateErrors(s, first, reason)
	l.addUnchecked(s, first)
	// Problems restate the phases and gates above; alone they are the news.
	if s.Verdict == summary.VerdictError && first == nil && len(l.lines) == 0 {
		l.addProblems(s, reason)
	}
	if len(l.lines) == 0 {
		return
	}
	for _, line := range l.lines {
		fmt.Fprintf(b, "- %s\n", line)
	}
	b.WriteString("\n")
}

// failureLines are the lines of writeOtherFailures, with the causes they
// said, so that each is said once.
type failureLines struct {
	said  map[string]bool
	lines []string
}

// newFailureLines starts the lines with the first failed phase's cause
// said: the verdict line names it.
func newFailureLines(first *summary.Phase) *failureLines {
	l := &failureLines{said: map[string]bool{}}
	if first != nil {
		l.said[CauseLine(*first)] = true
		l.said[strings.TrimSpace(first.Error)] = true
	}
	return l
}

// add appends line unless its cause key was said already.
func (l *failureLines) add(key, line string) {
	if key != "" && l.said[key] {
		return
	}
	l.said[key] = true
	l.lines = append(l.lines, line)
}

// addPhases lists the failed phases after the first, and the phases kept
// from running: with their own reason when no phase failed, else named
// together as its consequence.
func (l *failureLines) addPhases(s summary.Summary, first *summary.Phase) {
	var notRun []string
	for _, p := range s.Phases {
		switch {
		case first != nil && p.Name == first.Name, gatesSayIt(s, p):
		case p.Status == summary.StatusFailed || p.Status == summary.StatusCanceled:
			l.add(CauseLine(p), fmt.Sprintf("**%s** %s: %s", Text(p.Name), Text(p.Status), Text(CauseLine(p))))
		case p.Status == summary.StatusNotRun:
			if why := strings.TrimSpace(p.Error); why != "" && !l.said[why] && first == nil {
				l.add(why, fmt.Sprintf("**%s** %s: %s", Text(p.Name), Text(p.Status), Text(Clip(why, 240))))
			} else {
				notRun = append(notRun, Text(p.Name))
			}
		}
	}
	if len(notRun) > 0 {
		l.lines = append(l.lines, "not run because of it: "+strings.Join(notRun, ", "))
	}
}

// addGateErrors lists the gates that erred, but for the one the verdict
// line quoted.
func (l *failureLines) addGateErrors(s summary.Summary, first *summary.Phase, reason string) {
	unmeasured := 0
	for _, g := range s.Gates {
		if g.Verdict != summary.VerdictError {
			continue
		}
		// Gates with nothing to judge after a failed phase are its
		// consequence: counted, not retold.
		if first != nil && strings.Contains(g.Message, "not measured") {
			unmeasured++
			continue
		}
		line := "**gate** error: " + Text(Clip(g.Message, 240))
		if !strings.Contains(reason, line) {
			l.add(g.Message, line)
		}
	}
	if unmeasured > 0 {
		l.lines = append(l.lines, plural(unmeasured, "gate")+" not judged: nothing was measured")
	}
}

// addUnchecked lists the checks that could not be made, but for those
// the verdict line of an unverified run said.
func (l *failureLines) addUnchecked(s summary.Summary, first *summary.Phase) {
	var uncheckedGates []summary.GateResult
	for _, g := range s.Gates {
		if g.Verdict == summary.VerdictNoBaseline || g.Verdict == summary.VerdictUnverified {
			uncheckedGates = append(uncheckedGates, g)
		}
	}
	// The verdict line of an unverified run said the shared cause once.
	grouped := s.Verdict == summary.VerdictUnverified && first == nil && uncheckedCause(uncheckedGates) != ""
	unchecked := 0
	for _, g := range uncheckedGates {
		unchecked++
		// The verdict line quoted the first check of an unverified run.
		if grouped || unchecked == 1 && s.Verdict == summary.VerdictUnverified && first == nil {
			continue
		}
		l.add(g.Message, "could not be checked (unverified: a warning, not a pass): "+Text(Clip(g.Message, 400)))
	}
}

// addProblems lists the run's problems, but for the first when the
// verdict line quoted it.
func (l *failureLines) addProblems(s summary.Summary, reason string) {
	for i, p := range s.Problems {
		if i == 0 && strings.Contains(reason, Text(Clip(p, 240))) {
			continue
		}
		l.add(p, Text(Clip(p, 400)))
	}
}

// writeUncheckedDetails lists, in the details, each check the verdict
// line grouped under their shared cause, in its own words.
func writeUncheckedDetails(b *strings.Builder, s summary.Summary) {
	gates := gatesWhere(s, func(g summary.GateResult) bool {
		return g.Verdict == summary.VerdictNoBaseline || g.Verdict == summary.VerdictUnverified
	})
	if s.Verdict != summary.VerdictUnverified || failedPhase(s) != nil || uncheckedCause(gates) == "" {
		return
	}
	b.WriteString("Each check that could not be checked (unverified: a warning, not a pass):\n\n")
	for _, g := range gates {
		fmt.Fprintf(b, "- %s\n", Text(Clip(g.Message, 600)))
	}
	b.WriteString("\n")
}
