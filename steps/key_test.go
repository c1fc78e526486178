package steps_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/steps"
	"github.com/google/go-cmp/cmp"
)

func TestKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 120)
	tests := []struct {
		name  string
		parts []string
		want  string
	}{
		{"plain", []string{"bench"}, "bench"},
		{"parts joined with colons", []string{"bench", "minimax-m3", "mi355x"}, "bench:minimax-m3:mi355x"},
		{"slash and spaces", []string{"MiniMaxAI/MiniMax-M3", "tp 8"}, "MiniMaxAI-MiniMax-M3:tp-8"},
		{"runs collapse and ends trim", []string{"  a //  b  "}, "a-b"},
		{"colon inside a part", []string{"a:b", "c"}, "a-b:c"},
		{"interpolation characters dropped", []string{"${HOME}", "$x"}, "HOME:x"},
		{"dots and underscores kept", []string{"v0.11.2_rc1"}, "v0.11.2_rc1"},
		{"unicode replaced", []string{"ünï", "cödé"}, "n:c-d"},
		{"empty parts skipped", []string{"", "a", "///", "b"}, "a:b"},
		{"nothing usable", []string{"", "//"}, ""},
		{"no parts", nil, ""},
		{"uuid gets a prefix", []string{"123E4567-e89b-12d3-a456-426614174000"}, "step-123E4567-e89b-12d3-a456-426614174000"},
		{"exactly 100 kept", []string{strings.Repeat("b", 100)}, strings.Repeat("b", 100)},
		// sha256 of 120 "a"s starts 2f3d3354.
		{"long truncated with hash", []string{long}, strings.Repeat("a", 91) + "-2f3d3354"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := steps.Key(tt.parts...)
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Key(%q) diff (-got +want):\n%s", tt.parts, diff)
			}
		})
	}
}

var truncatedKey = regexp.MustCompile(`^a{91}-[0-9a-f]{8}$`)

func TestKeyTruncationIsStableAndDistinct(t *testing.T) {
	t.Parallel()
	prefix := strings.Repeat("a", 100)
	k1 := steps.Key(prefix, "one")
	k2 := steps.Key(prefix, "two")
	if k1 == k2 {
		t.Errorf("Key(prefix, one) = Key(prefix, two) = %q, want distinct keys", k1)
	}
	if again := steps.Key(prefix, "one"); again != k1 {
		t.Errorf("Key is not stable: %q then %q", k1, again)
	}
	for _, k := range []string{k1, k2, steps.Key(strings.Repeat("a", 120))} {
		if !truncatedKey.MatchString(k) {
			t.Errorf("Key() = %q, want 91 a's, '-' and 8 hex digits", k)
		}
	}
	// A cut landing on separators does not leave them before the hash.
	if k := steps.Key(strings.Repeat("x", 90), "y"); len(k) != 92 {
		t.Errorf("Key(90 x, y) = %q, want it whole (92 characters)", k)
	}
	if k := steps.Key(strings.Repeat("x", 91), strings.Repeat("y", 20)); strings.Contains(k, ":-") {
		t.Errorf("Key() = %q, want no separator right before the hash", k)
	}
}

// FuzzKey checks that every key Key makes passes Validate.
func FuzzKey(f *testing.F) {
	for _, s := range []string{"", "a", "a/b c", strings.Repeat("z", 200), "00000000-0000-0000-0000-000000000000", "${X}"} {
		f.Add(s, "part")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		k := steps.Key(a, b)
		if k == "" {
			return
		}
		if strings.ContainsAny(k, "${}") {
			t.Errorf("Key(%q, %q) = %q, has an interpolation character", a, b, k)
		}
		p := steps.Pipeline{Steps: []steps.Step{steps.CommandStep{Key: k, Commands: []string{"true"}}}}
		if err := p.Validate(); err != nil {
			t.Errorf("Key(%q, %q) = %q, Validate() error = %v", a, b, k, err)
		}
	})
}
