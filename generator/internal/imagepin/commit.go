package imagepin

import "regexp"

var (
	fullSHARE    = regexp.MustCompile(`^[0-9a-f]{40}$`)
	nightlyTagRE = regexp.MustCompile(`^nightly-([0-9a-f]{7,40})$`)
	commitRE     = regexp.MustCompile(`^[0-9a-f]{7,40}$`)
	digitsRE     = regexp.MustCompile(`^[0-9]+$`)
)

// CommitFromTag reads a vLLM commit out of a tag: a bare 40-hex tag (as
// vLLM's release repositories push) or nightly-<7 to 40 hex>. A tag of
// digits only, such as nightly-20260102, reads as a date, not a commit.
func CommitFromTag(tag string) string {
	if fullSHARE.MatchString(tag) {
		return tag
	}
	if m := nightlyTagRE.FindStringSubmatch(tag); m != nil && !digitsRE.MatchString(m[1]) {
		return m[1]
	}
	return ""
}

// commitValue accepts a label or annotation value that is a commit; vLLM's
// build writes "unknown" when it had none.
func commitValue(s string) string {
	if commitRE.MatchString(s) {
		return s
	}
	return ""
}

// sameCommit says whether two commits, either possibly abbreviated, name
// the same one.
func sameCommit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return b[:len(a)] == a
}
