package proc

import (
	"bytes"
	"regexp"
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

// Write never fails. A line longer than maxLine is kept as several, so
// that output without line breaks holds at most maxLine bytes a line
// whatever the size of the writes.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	eachLine(p, &t.partial, func(line []byte) { t.add(string(line)) })
	return len(p), nil
}

// eachLine splits p at line feeds, continuing the unfinished line in
// *pending, and calls emit with every line completed, without its line
// feed; a line reaching maxLine bytes is emitted there and continues as
// the next. *pending never holds more than maxLine bytes.
func eachLine(p []byte, pending *[]byte, emit func(line []byte)) {
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		chunk := rest
		if i >= 0 {
			chunk = rest[:i]
		}
		if room := maxLine - len(*pending); len(chunk) > room {
			*pending = append(*pending, chunk[:room]...)
			emit(*pending)
			*pending = (*pending)[:0]
			rest = rest[room:]
			continue
		}
		*pending = append(*pending, chunk...)
		if i < 0 {
			return
		}
		emit(*pending)
		*pending = (*pending)[:0]
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

// Caps of a cause: a few lines, a few hundred bytes.
const (
	causeLines = 3
	causeBytes = 400
)

// errorLine matches a line that reports a failure: a Python exception
// ("torch.OutOfMemoryError: ..."), an error or fatal log line, a
// shell's or docker's complaint.
var errorLine = regexp.MustCompile(`(?i)(^|[\s.\[:])(\w*(error|exception)\b|fatal|panic|killed|out of memory|no such file|not found|permission denied|cannot|could not|unable to)`)

// noise are lines that match errorLine but carry nothing: traceback
// frames and the line that introduces them.
var noise = regexp.MustCompile(`^\s*(Traceback \(most recent call last\)|File ".*", line \d+|During handling of the above exception|The above exception was the direct cause)`)

// Cause is what a failed process said about its failure: the last line
// that reports an error, with up to two error lines just before it, or
// the last non-empty line when none does; never a warning or an
// informational log line; capped at a few hundred bytes. Empty when the
// process printed nothing else.
func (t *Tail) Cause() string {
	return CauseOf(t.Lines())
}

// ErrorCause is Cause without the fall-back: "" when no line reports an
// error. A process that is still running when the runner gave up on it
// (a health wait that timed out) has no cause of its own unless it said
// one.
func (t *Tail) ErrorCause() string {
	return causeOf(t.Lines(), false)
}

// CauseOf is Cause over lines already read.
func CauseOf(lines []string) string {
	return causeOf(lines, true)
}

// accessLog is a line of the server's per-request log: never a cause.
var accessLog = regexp.MustCompile(`^\s*INFO:\s+\S+ - "[A-Z]+ /`)

// vllmPrefix is the process prefix vLLM puts before each line of its
// processes: "(EngineCore pid=1150) ".
var vllmPrefix = regexp.MustCompile(`^\([A-Za-z][\w.-]*[^()]*?\bpid=\d+\) ?`)

// quiet matches lines that are never a cause however they are worded:
// warnings and informational log lines. vLLM starts every time with
// "[W1202 07:58:12.964 socket.cpp:207] [c10d] The hostname of the client
// socket cannot be retrieved" and ends with torch's "Warning: WARNING:
// destroy_process_group() was not called"; neither says why anything
// failed. Forms: vLLM's logger ("WARNING 12-02 07:58:17 [...]"),
// uvicorn's ("INFO:     ..."), glog's (torch's C++: "[W1202 ...",
// "[rank0]:[W1202 ..."), Python's warnings ("...: UserWarning: ..."),
// lm_eval's ("2026-12-02:07:53:27 WARNING  [...]") and the logging
// module's default ("2026-12-02 07:58:17,068 - INFO - ...").
var quiet = regexp.MustCompile(`^((WARNING|WARN|INFO|DEBUG) \d\d-\d\d \d|INFO:\s|(\[rank\d+\]:)?\[?[WI]\d{4} \d\d:\d\d:\d\d|\S+ (WARNING|INFO|DEBUG)\s+\[)|\b\w*Warning: |\s- (WARNING|INFO|DEBUG) -\s`)

// isQuiet says whether l, trimmed, is a warning or an informational line.
func isQuiet(l string) bool {
	return quiet.MatchString(vllmPrefix.ReplaceAllString(l, ""))
}

func causeOf(lines []string, fallback bool) string {
	last := -1
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && errorLine.MatchString(l) && !noise.MatchString(l) && !isQuiet(l) {
			last = i
			break
		}
	}
	var picked []string
	if last < 0 {
		if !fallback {
			return ""
		}
		for i := len(lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(lines[i]); l != "" && !accessLog.MatchString(l) && !isQuiet(l) {
				picked = []string{l}
				break
			}
		}
	} else {
		picked = []string{strings.TrimSpace(lines[last])}
		for i := last - 1; i >= 0 && len(picked) < causeLines; i-- {
			l := strings.TrimSpace(lines[i])
			// An indented line is a traceback's source line, not a message.
			if l == "" || l != strings.TrimRight(lines[i], " \t\r") || !errorLine.MatchString(l) || noise.MatchString(l) || isQuiet(l) {
				break
			}
			picked = append([]string{l}, picked...)
		}
	}
	s := strings.Join(picked, "\n")
	if len(s) > causeBytes {
		s = "…" + s[len(s)-causeBytes:]
		s = strings.ToValidUTF8(s, "")
	}
	return s
}
