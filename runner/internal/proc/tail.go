package proc

import (
	"bytes"
	"strings"
	"sync"
)

// Tail is an io.Writer that keeps the last lines written to it, so that a
// failure can quote the end of a log ("the last 80 lines"). It is safe for
// concurrent use.
type Tail struct {
	mu      sync.Mutex
	max     int
	lines   []string // a ring once full; start is the oldest
	start   int
	partial []byte
}

// NewTail returns a Tail that keeps the last n lines (at least one).
func NewTail(n int) *Tail {
	return &Tail{max: max(n, 1)}
}

// Write never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rest := p
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			t.partial = append(t.partial, rest...)
			if len(t.partial) >= maxLine {
				t.add(string(t.partial))
				t.partial = t.partial[:0]
			}
			return len(p), nil
		}
		t.partial = append(t.partial, rest[:i]...)
		t.add(string(t.partial))
		t.partial = t.partial[:0]
		rest = rest[i+1:]
	}
}

func (t *Tail) add(line string) {
	if len(t.lines) < t.max {
		t.lines = append(t.lines, line)
		return
	}
	t.lines[t.start] = line
	t.start = (t.start + 1) % t.max
}

// Lines returns the last n lines, oldest first, without newlines. An
// unfinished last line counts as a line.
func (t *Tail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.lines)+1)
	out = append(out, t.lines[t.start:]...)
	out = append(out, t.lines[:t.start]...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	if len(out) > t.max {
		out = out[len(out)-t.max:]
	}
	return out
}

// String returns the kept lines joined by newlines, ending with one when
// there is any line.
func (t *Tail) String() string {
	lines := t.Lines()
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
