package imagepin

import "testing"

func TestCommitFromTag(t *testing.T) {
	t.Parallel()
	tests := []struct{ tag, want string }{
		{"nightly-abc1234", "abc1234"},
		{"nightly-" + commitA, commitA},
		{commitA, commitA},
		{"nightly", ""},
		{"latest", ""},
		{"nightly-aarch64", ""},
		{"nightly-x86_64", ""},
		{"nightly-20260102", ""}, // a date
		{"nightly-ABC1234", ""},  // git prints lower case
		{"abc1234", ""},          // a short bare tag is too often a word or a version
		{"v0.11.0", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := CommitFromTag(tt.tag); got != tt.want {
			t.Errorf("CommitFromTag(%q) = %q, want %q", tt.tag, got, tt.want)
		}
	}
}
