package testutil

import (
	"regexp"
	"strings"
	"testing"
)

// exponentRE matches a number in exponent notation as Go's %g and %e,
// Python and JavaScript write it: 1.765e+04, 1e-05, 2.5E+21. Hex digests
// never hold a sign after the e, so they do not match; the groups of a
// UUID can (31afd2b1-895e-4378-…), so hyphen-joined words are skipped in
// Exponents.
var exponentRE = regexp.MustCompile(`(?i)(^|[^0-9A-Za-z_.])[0-9]+(\.[0-9]+)?e[+-][0-9]+\b`)

// isWordChar reports whether c is a letter or a digit.
func isWordChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// hyphenJoined reports whether the match line[start:end] is a group of a
// hyphen-joined word such as a UUID or a build id: a hyphen with a
// letter or digit before it, or after it, touches the match. A negative
// number (-1e-05) has no word before its sign.
func hyphenJoined(line string, start, end int) bool {
	if start >= 2 && line[start-1] == '-' && isWordChar(line[start-2]) {
		return true
	}
	return end+1 < len(line) && line[end] == '-' && isWordChar(line[end+1])
}

// Exponents returns the numbers in exponent notation in text, each with
// its line.
func Exponents(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, m := range exponentRE.FindAllStringSubmatchIndex(line, -1) {
			if hyphenJoined(line, m[3], m[1]) {
				continue
			}
			out = append(out, strings.TrimSpace(line[m[3]:m[1]])+" in: "+strings.TrimSpace(line))
		}
	}
	return out
}

// CheckNoExponent fails t when text, which a person reads (an
// annotation, a report, a log line, a message in summary.json), writes a
// number in exponent notation: numbers for people go through numfmt.
func CheckNoExponent(t testing.TB, what, text string) {
	t.Helper()
	for _, e := range Exponents(text) {
		t.Errorf("%s writes a number in exponent notation: %s", what, e)
	}
}
