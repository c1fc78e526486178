package linecut

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		want   []string
	}{
		{name: "whole lines", writes: []string{"a\nb\n"}, want: []string{"a", "b"}},
		{name: "a line across writes", writes: []string{"ab", "c\nd"}, want: []string{"abc"}},
		{name: "carriage returns end lines", writes: []string{"1%\r2%\rdone\n"}, want: []string{"1%", "2%", "done"}},
		{name: "a long line is cut at Max", writes: []string{"0123456789", "abc\nok\n"}, want: []string{"01234567", "ok"}},
		{name: "empty lines", writes: []string{"\n\n"}, want: []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Splitter{Max: 8}
			var got []string
			for _, w := range tt.writes {
				s.Write([]byte(w), func(b []byte) { got = append(got, string(b)) })
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// One huge write without a line break leaves a line's bound held, not
// the write's size.
func TestSplitterHoldsOnlyItsBound(t *testing.T) {
	t.Parallel()
	var s Splitter
	s.Write(bytes.Repeat([]byte("x"), 16<<20), func([]byte) {})
	if c := cap(s.partial); c > 2*DefaultMax {
		t.Errorf("holds %d bytes after a 16 MiB write, want at most %d", c, 2*DefaultMax)
	}
}
