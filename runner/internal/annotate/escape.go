package annotate

// Escaping, one function per place text lands in an annotation. Text
// from summaries, recipes and tool output is never trusted: `runner
// report` reads summaries any job of the build could have written.

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/benchkite/benchkite/internal/untrusted"
)

// markdownSpecial are the characters that could start markup (a tag, a
// link or image, code, emphasis), break a table row or end an escape; each becomes a numeric character reference,
// which Markdown shows as the character and never interprets (a "|" as
// "&#124;" is not a cell separator, a "<" as "&#60;" opens no tag).
const markdownSpecial = "\\`*[]<>|&~"

// Text makes s safe as Markdown inline text anywhere an annotation puts
// it: a paragraph, a list item, a heading or a table cell. Line breaks
// become spaces and control characters are dropped, so a row stays a row.
func Text(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range untrusted.NoAutolink(strings.ReplaceAll(s, "\r\n", "\n")) {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case untrusted.IsBidi(r):
			b.WriteString(untrusted.BidiName(r))
		case r == utf8.RuneError, unicode.IsControl(r), r == '\u2028', r == '\u2029':
			// dropped: invalid UTF-8, controls and line separators
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r < utf8.RuneSelf && strings.ContainsRune(markdownSpecial, r):
			fmt.Fprintf(&b, "&#%d;", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// InlineCode renders s in a monospace span that is safe in text and in
// table cells. Plain text gets a Markdown code span, in which nothing is
// interpreted; text with a backtick, "|", a backslash, "<", ">", "&" or a
// control character gets an HTML <code> element around Text(s), since a code
// span would need "\|" inside tables but not outside, and cannot escape
// a backslash before it.
func InlineCode(s string) string {
	if s != "" && !strings.ContainsAny(s, "`|\\<>&") && strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || untrusted.IsBidi(r) }) < 0 && utf8.ValidString(s) {
		return "`" + s + "`"
	}
	return "<code>" + Text(s) + "</code>"
}

// HTMLAttr makes s safe as the value of a double-quoted HTML attribute.
func HTMLAttr(s string) string {
	return html.EscapeString(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
}

// Truncated is the note a capped annotation body ends with.
const Truncated = "\n\n**truncated**: this annotation reached Buildkite's size limit; the rest is in the job's artifacts (summary.json).\n"

// Cap keeps body under max bytes: when it is longer, it is cut at the last
// line break that leaves room for the Truncated note, so that no table row
// or tag is cut in half, and the note is appended.
func Cap(body string, max int) string {
	if len(body) <= max {
		return body
	}
	keep := max - len(Truncated)
	if keep < 0 {
		keep = 0
	}
	cut := CutUTF8(body, keep)
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i]
	}
	return cut + Truncated
}

var (
	// jobIDRE is a Buildkite job id (a UUID), the only text a summary
	// may put into a link fragment.
	jobIDRE = regexp.MustCompile(`^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$`)
	// safeURLRE is a URL that cannot end a Markdown link early.
	safeURLRE = regexp.MustCompile(`^https?://[A-Za-z0-9._~/:%-]+$`)
	// safeNameRE is a recipe name or branch that can stand in a URL as is.
	safeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

func jobID(s string) bool    { return jobIDRE.MatchString(s) }
func safeURL(s string) bool  { return safeURLRE.MatchString(s) }
func safeName(s string) bool { return safeNameRE.MatchString(s) }
