package tools

import (
	"regexp"
	"strings"
	"testing"
)

// requirementRE is one locked requirement's first line: name==version,
// an optional environment marker, and the continuation to its hashes.
var requirementRE = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)( ; [^\\]+)? \\$`)

// TestLocksPinEverything reads the embedded locks as pip does with
// --require-hashes: every requirement pinned exactly and hashed, the
// set's own pins among them, and none of what the BFCL set leaves out.
func TestLocksPinEverything(t *testing.T) {
	t.Parallel()
	for _, bfcl := range []bool{false, true} {
		set := Locked(bfcl)
		versions := map[string][]string{}
		lines := strings.Split(string(set.Lock), "\n")
		for i := 0; i < len(lines); i++ {
			line := lines[i]
			if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "    # ") {
				continue
			}
			m := requirementRE.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s:%d: %q is not a pinned requirement", set.Name, i+1, line)
				continue
			}
			hashes := 0
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    --hash=sha256:") {
				i++
				hashes++
			}
			if hashes == 0 {
				t.Errorf("%s: %s has no hash", set.Name, m[1])
			}
			name := strings.ToLower(strings.ReplaceAll(m[1], "_", "-"))
			versions[name] = append(versions[name], m[2])
		}
		for _, p := range set.Packages {
			if got := versions[p.Name]; len(got) != 1 || got[0] != p.Version {
				t.Errorf("%s pins %s at %v, want %s", set.Name, p.Name, got, p.Version)
			}
		}
		for _, heavy := range []string{"torch", "sentence-transformers", "faiss-cpu", "transformers"} {
			if v, ok := versions[heavy]; ok {
				t.Errorf("%s holds %s %v", set.Name, heavy, v)
			}
		}
		if len(versions) < 50 {
			t.Errorf("%s pins %d distributions; a full lock of lm-eval has more", set.Name, len(versions))
		}
	}
	if Locked(false).Key() == Locked(true).Key() {
		t.Error("both tool sets have one key")
	}
}
