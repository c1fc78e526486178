package annotate

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    func(string) string
		in   string
		want string
	}{
		{"text plain", Text, "gsm8k exact_match", "gsm8k exact_match"},
		{"text tag", Text, "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"text pipe and backslash", Text, `a\|b`, "a&#92;&#124;b"},
		{"text link and image", Text, "![x](http://e)", "!&#91;x&#93;(http:\u200b//e)"},
		{"text bare URL", Text, "see https://evil.example/login or WWW.evil.example", "see https:\u200b//evil.example/login or WWW\u200b.evil.example"},
		{"text bidi override", Text, "ok \u202egnp.exe\u202c \u2066x\u2069", "ok [U+202E]gnp.exe[U+202C] [U+2066]x[U+2069]"},
		{"code bidi", InlineCode, "a\u202eb", "<code>a[U+202E]b</code>"},
		{"text entity", Text, "&lt;", "&amp;lt;"},
		{"text lines", Text, "a\r\nb\nc\rd\te", "a b c d e"},
		{"text controls dropped", Text, "a\x00b\x1bc\u2028d", "abcd"},
		{"code plain", InlineCode, "org/model", "`org/model`"},
		{"code backtick", InlineCode, "a`b", "<code>a&#96;b</code>"},
		{"code pipe", InlineCode, "a|b", "<code>a&#124;b</code>"},
		{"code tag", InlineCode, "<b>", "<code>&lt;b&gt;</code>"},
		{"code empty", InlineCode, "", "<code></code>"},
		{"attr", HTMLAttr, `x" onerror="alert(1)`, "x&#34; onerror=&#34;alert(1)"},
		{"attr tag", HTMLAttr, "<a>&", "&lt;a&gt;&amp;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.f(tt.in); got != tt.want {
				t.Errorf("%s(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
			}
		})
	}
}

func TestCap(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("| é | row |\n", 1000)
	tests := []struct {
		name string
		max  int
		cut  bool
	}{
		{"fits", len(body), false},
		{"cut", 4000, true},
		{"tiny", 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Cap(body, tt.max)
			if !tt.cut {
				if diff := cmp.Diff(got, body); diff != "" {
					t.Errorf("Cap() diff (-got +want):\n%s", diff)
				}
				return
			}
			if !strings.HasSuffix(got, Truncated) || !utf8.ValidString(got) {
				t.Errorf("Cap(%d) = …%q, want valid UTF-8 ending in the truncated note", tt.max, got[max(len(got)-80, 0):])
			}
			if kept := strings.TrimSuffix(got, Truncated); kept != "" && !strings.HasSuffix(kept, "|") {
				t.Errorf("Cap(%d) cut inside a row: …%q", tt.max, kept[max(len(kept)-40, 0):])
			}
			if tt.max > len(Truncated) && len(got) > tt.max {
				t.Errorf("Cap(%d) is %d bytes", tt.max, len(got))
			}
		})
	}
}
