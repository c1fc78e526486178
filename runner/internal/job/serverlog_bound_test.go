package job

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"testing"
)

// repeatReader is endless output without a line break.
type repeatReader struct{}

func (repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// lineCheck counts the job log's lines and keeps the longest.
type lineCheck struct {
	partial, longest int
	lines            int
}

func (c *lineCheck) Write(p []byte) (int, error) {
	for _, b := range p {
		if b == '\n' {
			c.longest, c.partial = max(c.longest, c.partial), 0
			c.lines++
			continue
		}
		c.partial++
	}
	return len(p), nil
}

// A server that writes 128 MiB without a line break, in the pipe's 32 KiB
// reads and in one write of 16 MiB, costs the runner a bounded amount of
// memory: every writer its output goes to (the job log's view, its prefix
// writer, the tail of last lines) holds at most a line's bound.
func TestServerOutputIsBounded(t *testing.T) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	var log lineCheck
	s, out := newServerOutput(&log, devnull)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const total = 128 << 20
	if _, err := io.CopyBuffer(out, io.LimitReader(repeatReader{}, total), make([]byte, 32<<10)); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write(bytes.Repeat([]byte("y"), 16<<20)); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d MiB without a line break: %.1f MiB held after it, %d job-log lines, the longest %d bytes",
		(total+16<<20)>>20, float64(held)/(1<<20), log.lines, log.longest)
	if held > 32<<20 {
		t.Errorf("the server's output writers hold %d MiB after %d MiB without a line break, want at most 32", held>>20, (total+16<<20)>>20)
	}
	if log.longest > maxServerLine+len("[vllm] ") {
		t.Errorf("the job log got a line of %d bytes, want at most %d", log.longest, maxServerLine+len("[vllm] "))
	}
	for _, l := range s.tail.Lines() {
		if len(l) > maxServerLine {
			t.Errorf("the tail kept a line of %d bytes", len(l))
			break
		}
	}
	runtime.KeepAlive(s)
}
