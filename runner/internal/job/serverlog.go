package job

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sync"
	"time"
)

// serverLogView is what the job log shows of the server's output;
// server.log keeps all of it. A progress bar that redraws itself with
// carriage returns (weights loading, CUDA graph capture) shows as lines
// as it updates, at most one every progressEvery, and its last state; the
// per-request access lines ("POST /v1/completions HTTP/1.1" 200 OK), which
// would bury everything else during the bench, are counted, not shown.
type serverLogView struct {
	mu      sync.Mutex
	dst     io.Writer
	every   time.Duration
	now     func() time.Time
	pending []byte    // the current line, not yet ended
	lastCR  time.Time // when a progress line was last shown
	held    []byte    // the newest progress line not shown yet
	access  int
}

// maxServerLine bounds the bytes held of one line of the server's output
// (as proc's writers bound theirs): a server that writes gigabytes
// without a line break must not take the runner's memory with it.
const maxServerLine = 64 << 10

// progressEvery is how often a redrawn progress line is shown.
const progressEvery = 5 * time.Second

// accessLineRE is uvicorn's access log line, as vLLM's API server writes
// it: `INFO:     127.0.0.1:40312 - "POST /v1/completions HTTP/1.1" 200 OK`.
var accessLineRE = regexp.MustCompile(`- "(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) \S+ HTTP/[0-9.]+" [0-9]{3}\b`)

func newServerLogView(dst io.Writer, every time.Duration, now func() time.Time) *serverLogView {
	return &serverLogView{dst: dst, every: every, now: now}
}

// Write splits p at line feeds and carriage returns.
func (v *serverLogView) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out bytes.Buffer
	for _, c := range p {
		switch c {
		case '\n':
			v.line(&out, v.pending, false)
			v.pending = v.pending[:0]
		case '\r':
			v.line(&out, v.pending, true)
			v.pending = v.pending[:0]
		default:
			v.pending = append(v.pending, c)
			if len(v.pending) >= maxServerLine {
				// Output without line breaks is shown in pieces, never
				// held whole.
				v.line(&out, v.pending, false)
				v.pending = v.pending[:0]
			}
		}
	}
	if out.Len() > 0 {
		if _, err := v.dst.Write(out.Bytes()); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// line handles one line; redrawn says it ended with a carriage return.
func (v *serverLogView) line(out *bytes.Buffer, l []byte, redrawn bool) {
	if len(bytes.TrimSpace(l)) == 0 {
		return // "\r\n" ends the line the "\r" already handled
	}
	if accessLineRE.Match(l) {
		v.access++
		return
	}
	if redrawn {
		if now := v.now(); v.lastCR.IsZero() || now.Sub(v.lastCR) >= v.every {
			v.lastCR = now
			v.held = v.held[:0]
			out.Write(l)
			out.WriteByte('\n')
		} else {
			v.held = append(v.held[:0], l...)
		}
		return
	}
	v.flushHeld(out)
	out.Write(l)
	out.WriteByte('\n')
}

// flushHeld shows the progress line that was held back, so a bar's final
// state is never lost.
func (v *serverLogView) flushHeld(out *bytes.Buffer) {
	if len(v.held) > 0 {
		out.Write(v.held)
		out.WriteByte('\n')
		v.held = v.held[:0]
	}
}

// Close shows what is left and says how many request lines server.log
// holds that the job log does not.
func (v *serverLogView) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out bytes.Buffer
	v.flushHeld(&out)
	if len(bytes.TrimSpace(v.pending)) > 0 {
		v.line(&out, v.pending, false)
		v.pending = v.pending[:0]
	}
	if v.access > 0 {
		fmt.Fprintf(&out, "(%d request log lines are in server.log, not shown here)\n", v.access)
		v.access = 0
	}
	if out.Len() == 0 {
		return nil
	}
	_, err := v.dst.Write(out.Bytes())
	return err
}
