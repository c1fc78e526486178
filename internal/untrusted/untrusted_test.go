package untrusted

import "testing"

func TestShowBidiAndNoAutolink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fn   func(string) string
		in   string
		want string
	}{
		{"override shown by name", ShowBidi, "ok\u202Egnp.exe", "ok[U+202E]gnp.exe"},
		{"isolate and mark", ShowBidi, "a\u2066b\u200Fc", "a[U+2066]b[U+200F]c"},
		{"plain text unchanged", ShowBidi, "plain – text", "plain – text"},
		{"scheme broken", NoAutolink, "see https://x.example/a", "see https:\u200B//x.example/a"},
		{"www host broken", NoAutolink, "at WWW.example.com", "at WWW\u200B.example.com"},
		{"no url unchanged", NoAutolink, "a: b", "a: b"},
	}
	for _, tt := range tests {
		if got := tt.fn(tt.in); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}
