package selection

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/workloads"
)

func TestMDText(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"vllm-project/vllm#45381", "vllm-project/vllm#45381"},
		{"<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{`<img src=x onerror="a()">`, `&lt;img src=x onerror="a()"&gt;`},
		{"[click](javascript:alert(1))", `\[click\](javascript:alert(1))`},
		{"a | b", `a \| b`},
		{"**bold** _it_ ~~s~~ `code`", "\\*\\*bold\\*\\* \\_it\\_ \\~\\~s\\~\\~ \\`code\\`"},
		{`back\slash &amp;`, `back\\slash &amp;amp;`},
		{"two\nlines\r\nhere", "two lines here"},
		{"blocked on \u202Etxt.exe", "blocked on [U+202E]txt.exe"},
		{"see https://evil.example or www.x.io", "see https:\u200B//evil.example or www\u200B.x.io"},
		{"bell\a and nul\x00 and bad \xff utf8", "bell and nul and bad  utf8"},
	}
	for _, tt := range tests {
		if got := mdText(tt.in); got != tt.want {
			t.Errorf("mdText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// blocked_by text reaches the notes as literal text: no tag, link or table
// cell of a recipe survives.
func TestSelectionNotesEscapeBlockedBy(t *testing.T) {
	t.Parallel()
	reason := "blocked by <img src=x onerror=alert(1)> [x](javascript:y) | `z`"
	sel := &Selection{
		Mode:    ModeNightly,
		Runs:    []Selected{{Recipe: &workloads.Recipe{Name: "a", GPU: "H200"}, Why: "why | <b>"}},
		Skipped: []Skipped{{Name: "b", Reason: reason}},
	}
	notes := Notes(sel, BuildEnv{})
	for _, raw := range []string{"<img", "<b>", "[x](", "| `z`", "why | "} {
		if strings.Contains(notes, raw) {
			t.Errorf("Notes() holds %q unescaped:\n%s", raw, notes)
		}
	}
	if want := "- `b`: " + mdText(reason) + "\n"; !strings.Contains(notes, want) {
		t.Errorf("Notes() = %q, want the line %q", notes, want)
	}
}
