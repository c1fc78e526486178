package proc

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrefixWriter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		writes []string
		want   string // after Close
	}{
		{name: "one line", writes: []string{"hello\n"}, want: "[vllm] hello\n"},
		{name: "split across writes", writes: []string{"hel", "lo\nwor", "ld\n"}, want: "[vllm] hello\n[vllm] world\n"},
		{name: "several lines in one write", writes: []string{"a\nb\nc\n"}, want: "[vllm] a\n[vllm] b\n[vllm] c\n"},
		{name: "empty line", writes: []string{"\n"}, want: "[vllm] \n"},
		{name: "partial flushed on close", writes: []string{"a\nno newline"}, want: "[vllm] a\n[vllm] no newline\n"},
		{name: "nothing", writes: nil, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var dst bytes.Buffer
			w := NewPrefixWriter(&dst, "[vllm] ")
			for _, s := range tt.writes {
				n, err := w.Write([]byte(s))
				if n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
				}
			}
			if err := w.Close(); err != nil {
				t.Fatalf("Close() error = %v", err)
			}
			if diff := cmp.Diff(dst.String(), tt.want); diff != "" {
				t.Errorf("output diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestPrefixWriterHoldsPartialLineUntilNewline(t *testing.T) {
	t.Parallel()
	var dst bytes.Buffer
	w := NewPrefixWriter(&dst, "> ")
	w.Write([]byte("abc"))
	if dst.Len() != 0 {
		t.Errorf("partial line written early: %q", dst.String())
	}
	w.Write([]byte("\n"))
	if got, want := dst.String(), "> abc\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestPrefixWriterBoundsLongLines(t *testing.T) {
	t.Parallel()
	var dst bytes.Buffer
	w := NewPrefixWriter(&dst, "> ")
	// One write longer than a line may be: cut at maxLine, the rest held.
	w.Write(bytes.Repeat([]byte("x"), maxLine+10))
	if got, want := dst.String(), "> "+strings.Repeat("x", maxLine)+"\n"; got != want {
		t.Errorf("long line: got %d bytes, want %d", len(got), len(want))
	}
	w.Close()
	if got, want := dst.String(), "> "+strings.Repeat("x", maxLine)+"\n> "+strings.Repeat("x", 10)+"\n"; got != want {
		t.Errorf("long line and its rest: got %d bytes, want %d", len(got), len(want))
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestPrefixWriterReportsWriteError(t *testing.T) {
	t.Parallel()
	w := NewPrefixWriter(failingWriter{}, "> ")
	if _, err := w.Write([]byte("a\n")); err == nil {
		t.Error("Write() error = nil, want the destination's error")
	}
}

// Lines written concurrently, as a child's stdout and stderr are, must
// come out whole.
func TestPrefixWriterConcurrentLinesStayWhole(t *testing.T) {
	t.Parallel()
	var dst bytes.Buffer
	w := NewPrefixWriter(&dst, "[p] ")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				fmt.Fprintf(w, "writer %d line %d\n", g, i)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(dst.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("got %d lines, want 800", len(lines))
	}
	for _, l := range lines {
		var g, i int
		if _, err := fmt.Sscanf(l, "[p] writer %d line %d", &g, &i); err != nil {
			t.Fatalf("torn line %q: %v", l, err)
		}
	}
}
