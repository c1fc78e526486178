package gate

import (
	"fmt"
	"math"
	"regexp"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/internal/shell"
	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// culprit names the last good and first bad nights of the detector's
// range, past (oldest first) followed by tonight.
func culprit(past []pastValue, d detect.Decision, ton summary.NightRef, recipe string) summary.ChangePoint {
	at := func(i int) summary.NightRef {
		if i >= len(past) {
			return ton
		}
		return past[max(i, 0)].ref
	}
	cp := summary.ChangePoint{LastGood: at(d.LastGood), FirstBad: at(d.FirstBad), Widened: d.Widened}
	if d.Open != nil {
		cp.Found, cp.P = true, d.Open.P
		for _, c := range d.Changes {
			if c.Index == d.Open.Index {
				cp.Before, cp.After = math.Exp(c.Before), math.Exp(c.After)
			}
		}
	}
	cp.Bisect = bisect(recipe, cp)
	return cp
}

// commitRE is what `generator trigger --vllm-commit` accepts.
var commitRE = regexp.MustCompile(`^[0-9a-f]{7,40}$`)

// bisect are the commands that would find the vLLM commit between the
// last good and the first bad night: list the commits between, and run
// the recipe's bench on any of them as a triggered build.
func bisect(recipe string, cp summary.ChangePoint) []string {
	good, bad := cp.LastGood.VLLMCommit, cp.FirstBad.VLLMCommit
	if !commitRE.MatchString(good) || !commitRE.MatchString(bad) || good == bad {
		return nil
	}
	trigger := func(commit, what string) string {
		return shell.Join([]string{"generator", "trigger", "--vllm-commit", commit, "--workloads-list", recipe, "--bench-only",
			"--message", "bisect " + recipe + ": " + what})
	}
	return []string{
		shell.Join([]string{"git", "-C", "vllm", "rev-list", "--first-parent", "--reverse", good + ".." + bad}),
		trigger(good, "last good "+good),
		trigger(bad, "first bad "+bad),
	}
}

// describeChange says in words where a regression began.
func describeChange(cp summary.ChangePoint) string {
	if cp.LastGood == (summary.NightRef{}) && !cp.FirstBad.Tonight && cp.FirstBad.Value == 0 {
		return fmt.Sprintf("began with #%d (before the nights the history holds)", cp.FirstBad.Build)
	}
	s := "last good " + nightName(cp.LastGood) + ", first bad " + nightName(cp.FirstBad)
	if cp.Found {
		s = fmt.Sprintf("change point (p %s, mean %s then %s): %s", numfmt.P(cp.P), numfmt.Sig(cp.Before, 4), numfmt.Sig(cp.After, 4), s)
	}
	if cp.Widened {
		s += " (widened by a night each side: the evidence is weak)"
	}
	if len(cp.Bisect) > 0 {
		s += "; bisect with: " + cp.Bisect[0] + ", then `generator trigger --vllm-commit <commit> --workloads-list …` on the middle one"
	}
	return s
}

func nightName(r summary.NightRef) string {
	var s string
	switch {
	case r.Tonight && r.Build > 0:
		s = fmt.Sprintf("tonight (#%d)", r.Build)
	case r.Tonight:
		s = "tonight"
	default:
		s = fmt.Sprintf("#%d", r.Build)
	}
	s += " " + numfmt.Sig(r.Value, 4)
	if r.VLLMCommit != "" {
		s += " vLLM " + r.VLLMCommit
	}
	if r.ImageDigest != "" {
		s += " image " + r.ImageDigest
	}
	return s
}
