package proc

import (
	"io"
	"sync"
)

// maxLine bounds the bytes held for one unfinished line. A child that
// never writes a newline (progress bars) must not grow memory without end.
const maxLine = 64 << 10

// PrefixWriter writes each line it receives to another writer with a
// prefix, e.g. "[vllm] ". Only whole lines reach the destination, each in
// one Write call, so lines from several writers sharing a destination do
// not interleave mid-line. It is safe for concurrent use; bytes of an
// unfinished line from one caller may join the next caller's line.
type PrefixWriter struct {
	mu      sync.Mutex
	dst     io.Writer
	prefix  []byte
	pending []byte // the current unfinished line, without prefix
}

// NewPrefixWriter returns a PrefixWriter that writes to dst.
func NewPrefixWriter(dst io.Writer, prefix string) *PrefixWriter {
	return &PrefixWriter{dst: dst, prefix: []byte(prefix)}
}

// Write buffers p and writes every completed line. It reports len(p) on
// success so that callers such as io.Copy keep going.
func (w *PrefixWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []byte
	eachLine(p, &w.pending, func(line []byte) { out = w.appendLine(out, line) })
	if len(out) == 0 {
		return len(p), nil
	}
	if _, err := w.dst.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *PrefixWriter) appendLine(out, line []byte) []byte {
	out = append(out, w.prefix...)
	out = append(out, line...)
	return append(out, '\n')
}

// Close writes a trailing unfinished line, ended with a newline. It does
// not close the destination.
func (w *PrefixWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return nil
	}
	out := w.appendLine(nil, w.pending)
	w.pending = w.pending[:0]
	_, err := w.dst.Write(out)
	return err
}
