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

func TestCauseOf(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 600)
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"python traceback", []string{
			"INFO 12-01 engine starting",
			"Traceback (most recent call last):",
			`  File "/usr/lib/python3/site-packages/vllm/worker.py", line 88, in load`,
			"    raise torch.OutOfMemoryError(msg)",
			"torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB",
			"INFO 12-01 shutting down",
		}, "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB"},
		{"chained errors", []string{
			"step 3",
			"ERROR 12-01 [core.py:512] EngineCore failed to start.",
			"RuntimeError: Engine core initialization failed. See root cause above.",
		}, "ERROR 12-01 [core.py:512] EngineCore failed to start.\nRuntimeError: Engine core initialization failed. See root cause above."},
		{"no error line", []string{"loading", "done 12/40", ""}, "done 12/40"},
		{"access log is never the cause", []string{"loading", `INFO:     127.0.0.1:43218 - "GET /health HTTP/1.1" 503 Service Unavailable`}, "loading"},
		{"nothing", nil, ""},
		{"capped", []string{"ValueError: " + long}, "…" + ("ValueError: " + long)[len("ValueError: "+long)-400:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := CauseOf(tt.lines); got != tt.want {
				t.Errorf("CauseOf() = %q, want %q", got, tt.want)
			}
			// Without the fall-back only an error line is a cause.
			tail := NewTail(40)
			for _, l := range tt.lines {
				fmt.Fprintln(tail, l)
			}
			want := tt.want
			if tt.name == "no error line" || tt.name == "access log is never the cause" {
				want = ""
			}
			if got := tail.ErrorCause(); got != want {
				t.Errorf("ErrorCause() = %q, want %q", got, want)
			}
		})
	}
}
