package shell

import (
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestQuote(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "''"},
		{"plain-word_1.2/x:y=z,w", "plain-word_1.2/x:y=z,w"},
		{"two words", "'two words'"},
		{"it's", `'it'\''s'`},
		{"$(rm -rf /)", "'$(rm -rf /)'"},
		{`{"mode":0}`, `'{"mode":0}'`},
		{"a\nb", "'a\nb'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A real shell must read back exactly the argv that was quoted.
func TestJoinRoundTripsThroughSh(t *testing.T) {
	t.Parallel()
	argv := []string{"printf", "%s\\n", "plain", "two words", "it's", "$HOME", "`id`", `{"a":"b"}`, "a\nb", "", "*"}
	out, err := exec.Command("sh", "-c", Join(argv)).Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", Join(argv), err)
	}
	want := ""
	for _, a := range argv[2:] {
		want += a + "\n"
	}
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("sh output diff (-want +got):\n%s", diff)
	}
}
