package steps_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/benchkite/benchkite/steps"
	"github.com/buildkite/interpolate"
)

// agentEnv stands for an uploading job's environment; escaped strings must
// come through interpolation unchanged whatever it holds.
var agentEnv = interpolate.NewMapEnv(map[string]string{
	"HOME": "/root", "USER": "agent", "X": "expanded", "BUILDKITE_BRANCH": "main",
})

func TestEscapeInterpolation(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"no dollars", "no dollars"},
		{"$HOME", "$$HOME"},
		{"${X:-default} $$ $(date) $", "$${X:-default} $$$$ $$(date) $$"},
		{`\\$X`, `\\$$X`},
	}
	for _, tt := range tests {
		if got := steps.EscapeInterpolation(tt.in); got != tt.want {
			t.Errorf("EscapeInterpolation(%q) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := interpolate.Interpolate(agentEnv, steps.EscapeInterpolation(tt.in))
		if err != nil || back != tt.in {
			t.Errorf("Interpolate(EscapeInterpolation(%q)) = %q, %v; want the input back", tt.in, back, err)
		}
	}
}

// TestUnescapableIsReallyUnescapable pins the reason for ErrUnescapable:
// the agent drops the backslash of `\$`.
func TestUnescapableIsReallyUnescapable(t *testing.T) {
	t.Parallel()
	in := `echo \$HOME`
	back, err := interpolate.Interpolate(agentEnv, steps.EscapeInterpolation(in))
	if err == nil && back == in {
		t.Errorf("Interpolate(EscapeInterpolation(%q)) = %q, the input: ErrUnescapable is no longer needed", in, back)
	}
	p := steps.Pipeline{Steps: []steps.Step{steps.CommandStep{Commands: []string{in}}}}
	if _, err := steps.MarshalForUpload(p); !errors.Is(err, steps.ErrUnescapable) {
		t.Errorf("MarshalForUpload(%q) error = %v, want ErrUnescapable", in, err)
	}
}

// FuzzEscapeInterpolation checks that every string MarshalForUpload accepts
// survives the agent's interpolation library unchanged.
func FuzzEscapeInterpolation(f *testing.F) {
	for _, s := range []string{"$", "$$", "${", "${X", "${X:-a}", `\`, `\\$X`, `\$X`, "$(x)", "a$1b", "${X:0:2}", "${X?}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("JSON strings are UTF-8")
		}
		p := steps.Pipeline{Steps: []steps.Step{steps.CommandStep{Commands: []string{"true"}, Label: s}}}
		if _, err := steps.MarshalForUpload(p); err != nil {
			if !errors.Is(err, steps.ErrUnescapable) {
				t.Fatalf("MarshalForUpload(label %q) error = %v", s, err)
			}
			return
		}
		back, err := interpolate.Interpolate(agentEnv, steps.EscapeInterpolation(s))
		if err != nil || back != s {
			t.Errorf("Interpolate(EscapeInterpolation(%q)) = %q, %v; want the input back", s, back, err)
		}
	})
}

// A text over steps.MaxText (a long blocked_by, many invalid recipes) is cut
// with a note, so the step's environment stays small enough to start.
func TestTextValueCapped(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("recipe é problem line \\ with a backslash\n", 2000)
	v := steps.TextValue(long)
	if len(v) > 2*steps.MaxText {
		t.Fatalf("steps.TextValue() is %d bytes, over %d", len(v), 2*steps.MaxText)
	}
	back := strings.ReplaceAll(v, `\\`, `\`)
	if !strings.Contains(back, "more bytes cut") || !strings.HasPrefix(long, back[:strings.LastIndex(back, "\n…")]) || !utf8.ValidString(back) {
		t.Errorf("capped text is not a prefix of whole lines with a note:\n%s", back[len(back)-200:])
	}
	if short := "a\\b"; steps.TextValue(short) != `a\\b` {
		t.Errorf("steps.TextValue(%q) = %q", short, steps.TextValue(short))
	}
}
