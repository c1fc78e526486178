package trend

import "testing"

// A title too long for its room is cut at a word's end, not inside one.
func TestTruncateAtWord(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"minimax_m3-mi355x 8k-in-1k-out-conc-128 output throughput", 30, "minimax_m3-mi355x…"},
		{"p99 TTFT of the long run", 16, "p99 TTFT of the…"},
		{"p99 TTFT of the long run", 15, "p99 TTFT of…"},
		{"short", 10, "short"},
		{"averyveryverylongsinglewordtitle", 10, "averyvery…"},
		{"a · b · c · d", 8, "a · b…"},
		{"anything", 1, "…"},
	}
	for _, tt := range tests {
		if got := truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
