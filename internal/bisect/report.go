package bisect

import (
	"context"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/internal/bkapi"
)

// AnnotationContext is the context of a bisect's annotation, one per
// recipe, so a later bisect of the same recipe replaces it.
func AnnotationContext(recipe string) string { return "benchkite-bisect-" + recipe }

// commitURL links a vLLM commit.
func commitURL(c string) string { return "https://github.com/vllm-project/vllm/commit/" + c }

// Markdown is the bisect's result, or its progress before it is done:
// the first bad commit with its link, and the numbers on both sides.
func (s State) Markdown() string {
	var b strings.Builder
	if first := s.FirstBad(); first != "" {
		fmt.Fprintf(&b, "### :mag: `%s` %s regressed at vLLM [%s](%s)\n\n", s.Recipe, s.Metric, short(first), commitURL(first))
		good := s.Good
		if s.Lo >= 0 {
			good = s.Candidates[s.Lo].Commit
		}
		fmt.Fprintf(&b, "Last good: [%s](%s) %s · first bad: [%s](%s) %s. ", short(good), commitURL(good), s.valueOf(good), short(first), commitURL(first), s.valueOf(first))
	} else if s.Stopped != "" {
		good := s.Good
		if s.Lo >= 0 {
			good = s.Candidates[s.Lo].Commit
		}
		fmt.Fprintf(&b, "### :mag: bisect of `%s` %s stopped: the first bad commit is one of %d after [%s](%s) up to [%s](%s)\n\n",
			s.Recipe, s.Metric, s.Hi-s.Lo, short(good), commitURL(good), short(s.Candidates[s.Hi].Commit), commitURL(s.Candidates[s.Hi].Commit))
		fmt.Fprintf(&b, "Stopped: %s. ", oneLine(s.Stopped))
	} else {
		fmt.Fprintf(&b, "### :mag: bisecting `%s` %s: %d commit(s) left\n\n", s.Recipe, s.Metric, s.Hi-s.Lo-1)
	}
	used := fmt.Sprintf("%.1f GPU-h", s.UsedGPUHours)
	if s.UsedGPUHours < 0.1 {
		used = fmt.Sprintf("%.1f GPU-min", s.UsedGPUHours*60)
	}
	fmt.Fprintf(&b, "Found by build #%d; %d bisect build(s), %s.\n\n", s.Origin, len(s.Tested), used)
	if len(s.Tested) > 0 {
		b.WriteString("| build | vLLM | value | judged |\n|--:|---|--:|---|\n")
		for _, t := range s.Tested {
			judged, value := "good", fmt.Sprintf("%.4g", t.Value)
			switch {
			case t.Inconclusive:
				judged, value = "inconclusive: "+oneLine(t.Why), "–"
			case t.Bad:
				judged = "bad"
			}
			fmt.Fprintf(&b, "| #%d | [%s](%s) | %s | %s |\n", t.Build, short(t.Commit), commitURL(t.Commit), value, judged)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// oneLine keeps a reason inside one table cell: no line breaks, no
// pipes, no markup.
func oneLine(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ", "|", "/", "<", "‹", ">", "›", "[", "(", "]", ")", "`", "'").Replace(s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// valueOf is the measured value of commit, "(the night's)" when no bisect
// build tested it: an end the nights already judged.
func (s State) valueOf(commit string) string {
	for _, t := range s.Tested {
		if sameCommit(t.Commit, commit) && !t.Inconclusive {
			return fmt.Sprintf("%.4g", t.Value)
		}
	}
	return "(judged by the nights)"
}

// Announce annotates the build that found the regression and the bisect
// build with s's result or progress.
func Announce(ctx context.Context, c *bkapi.Client, s State, builds ...int) error {
	style := "info"
	if s.Over() {
		style = "warning"
	}
	var errs []string
	for _, n := range append([]int{s.Origin}, builds...) {
		if err := c.Annotate(ctx, n, AnnotationContext(s.Recipe), style, s.Markdown()); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("bisect %s: %s", s.Recipe, strings.Join(errs, "; "))
	}
	return nil
}
