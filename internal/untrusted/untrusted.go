// Package untrusted holds the character rules both binaries apply before
// text from a recipe, a build variable or a tool's output lands in
// Markdown that Buildkite renders: what a reader would be misled by, as
// opposed to the markup escapes each writer does for its own place.
package untrusted

import (
	"fmt"
	"regexp"
	"strings"
)

// IsBidi reports Unicode's bidirectional formatting characters: the
// embeddings, overrides and isolates, and the implicit marks. One would
// reorder what follows it on screen, so text could read as one thing and
// be another.
func IsBidi(r rune) bool {
	switch {
	case r >= '\u202A' && r <= '\u202E', r >= '\u2066' && r <= '\u2069':
		return true
	case r == '\u200E', r == '\u200F', r == '\u061C':
		return true
	}
	return false
}

// BidiName is how a bidi control is shown: by its code point.
func BidiName(r rune) string { return fmt.Sprintf("[U+%04X]", r) }

// ShowBidi writes each bidi control in s by name; the rest is unchanged,
// so it is safe inside a code block too.
func ShowBidi(s string) string {
	if strings.IndexFunc(s, IsBidi) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if IsBidi(r) {
			b.WriteString(BidiName(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// autolinkRE finds what GitHub-flavoured Markdown, which Buildkite
// renders, turns into a link without any markup: a URL scheme's "://"
// and a "www." host.
var autolinkRE = regexp.MustCompile(`(?i)(://|\bwww\.)`)

// NoAutolink breaks bare URLs with a zero-width space (after the ":" of
// "://", inside "www."), so the text shows as text and links nowhere.
func NoAutolink(s string) string {
	return autolinkRE.ReplaceAllStringFunc(s, func(m string) string {
		if m == "://" {
			return ":\u200B//"
		}
		return m[:3] + "\u200B" + m[3:]
	})
}
