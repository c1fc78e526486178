package proc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		n      int
		writes []string
		want   []string
	}{
		{name: "empty", n: 3, want: []string{}},
		{name: "fewer than n", n: 3, writes: []string{"a\nb\n"}, want: []string{"a", "b"}},
		{name: "wraps", n: 3, writes: []string{"1\n2\n3\n", "4\n5\n"}, want: []string{"3", "4", "5"}},
		{name: "line split across writes", n: 2, writes: []string{"al", "pha\nbe", "ta\n"}, want: []string{"alpha", "beta"}},
		{name: "partial last line counts", n: 2, writes: []string{"1\n2\n3"}, want: []string{"2", "3"}},
		{name: "n below one keeps one", n: 0, writes: []string{"a\nb\n"}, want: []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tail := NewTail(tt.n)
			for _, w := range tt.writes {
				fmt.Fprint(tail, w)
			}
			if diff := cmp.Diff(tail.Lines(), tt.want); diff != "" {
				t.Errorf("Lines() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestTailString(t *testing.T) {
	t.Parallel()
	tail := NewTail(80)
	for i := range 100 {
		fmt.Fprintf(tail, "line %d\n", i)
	}
	got := tail.String()
	if !strings.HasPrefix(got, "line 20\n") || !strings.HasSuffix(got, "line 99\n") || strings.Count(got, "\n") != 80 {
		t.Errorf("String() = %q, want lines 20..99", got)
	}
	if got := NewTail(5).String(); got != "" {
		t.Errorf("empty String() = %q, want empty", got)
	}
}
