package testutil

import (
	"regexp"
	"strings"
	"testing"
)

// exponentRE matches a number in exponent notation as Go's %g and %e,
// Python and JavaScript write it: 1.765e+04, 1e-05, 2.5E+21. Hex digests
// never hold a sign after the e, so they do not match.
var exponentRE = regexp.MustCompile(`(?i)(^|[^0-9A-Za-z_.])[0-9]+(\.[0-9]+)?e[+-][0-9]+\b`)

// Exponents returns the numbers in exponent notation in text, each with
// its line.
func Exponents(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		for _, m := range exponentRE.FindAllStringSubmatchIndex(line, -1) {
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
