package selection

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/benchkite/benchkite/internal/untrusted"
)

// Notes tells a person what the build runs and why, as markdown
// for `buildkite-agent annotate`.
func Notes(sel *Selection, env BuildEnv) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### benchkite: %s\n\n", modeTitle(sel, env))
	for _, n := range sel.Notes {
		fmt.Fprintf(&b, "%s\n\n", mdText(n))
	}
	if sel.Mode == ModePR && len(sel.Changed) > 0 {
		fmt.Fprintf(&b, "Files changed in this PR: %d\n\n", len(sel.Changed))
	}
	if len(sel.Runs) > 0 {
		b.WriteString("| recipe | gpu | why |\n|---|---|---|\n")
		for _, r := range sel.Runs {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.Recipe.Name, r.Recipe.GPU, mdText(r.Why))
		}
		b.WriteString("\n")
	}
	if len(sel.Invalid) > 0 {
		b.WriteString("**Invalid recipes** (their step fails; nothing reaches a GPU):\n\n```\n")
		for _, inv := range sel.Invalid {
			fmt.Fprintf(&b, "%s\n", untrusted.ShowBidi(strings.ReplaceAll(inv.Problems.Error(), "```", "'''")))
		}
		b.WriteString("```\n\n")
	}
	var blocked []Skipped
	for _, s := range sel.Skipped {
		if strings.HasPrefix(s.Reason, "blocked") {
			blocked = append(blocked, s)
		}
	}
	if len(blocked) > 0 {
		b.WriteString("Skipped as blocked (run them with `WORKLOADS=<name>`; they soft-fail):\n\n")
		for _, s := range blocked {
			fmt.Fprintf(&b, "- `%s`: %s\n", s.Name, mdText(s.Reason))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func modeTitle(sel *Selection, env BuildEnv) string {
	n := fmt.Sprintf("%d recipe", len(sel.Runs))
	if len(sel.Runs) != 1 {
		n += "s"
	}
	switch sel.Mode {
	case ModeExplicit:
		return n + " named in WORKLOADS"
	case ModeNightly:
		return n + " in the nightly (scheduled build)"
	case ModePR:
		return fmt.Sprintf("%s for PR #%s", n, env.PullRequest)
	}
	return n + " in the nightly set"
}

// mdEscaper is built once: a Replacer builds its tables on first use, and
// the notes of a large build have thousands of cells.
var mdEscaper = func() *strings.Replacer {
	// CommonMark lets a backslash escape any ASCII punctuation: the
	// characters that open inline markup (emphasis, strikethrough, links,
	// images, code spans, table cells) are written escaped. "<", ">" and "&"
	// become entities, so no HTML tag or entity reaches the annotation.
	// Block markup ("#", "-", "1.") needs a line start, and every text here
	// follows a prefix of ours on one line.
	pairs := []string{"<", "&lt;", ">", "&gt;", "&", "&amp;", "\r\n", " ", "\n", " ", "\r", " "}
	for _, c := range "\\`*_[]|~" {
		pairs = append(pairs, string(c), "\\"+string(c))
	}
	return strings.NewReplacer(pairs...)
}()

// mdText is recipe- or build-derived text as one line of literal markdown,
// safe in a paragraph, a list item or a table cell. Controls and invalid
// UTF-8 are dropped, bidi controls shown by name, and bare URLs broken so
// GitHub-flavoured Markdown links nowhere.
func mdText(s string) string {
	s = mdEscaper.Replace(s)
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || r == '\u2028' || r == '\u2029' || (unicode.IsControl(r) && !untrusted.IsBidi(r)) {
			return -1
		}
		return r
	}, s)
	return untrusted.ShowBidi(untrusted.NoAutolink(s))
}
