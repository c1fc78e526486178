package results

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
)

// Printed captures what `vllm bench serve` prints of its result on its
// standard output, which reaches the runner through a pipe of its own:
// the "Successful requests:" and "Output token throughput (tok/s):" rows
// of its result table. A result file whose numbers differ was not
// written by that bench run (another process of the uid replaced it).
type Printed struct {
	mu         sync.Mutex
	line       lineBuffer
	completed  *int
	throughput *float64
}

// Write scans whole lines; it never fails.
func (p *Printed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line.feed(b, 512, p.scan)
	return len(b), nil
}

func (p *Printed) scan(line string) {
	line = string(bytes.TrimSpace([]byte(line)))
	if v, ok := strings.CutPrefix(line, "Successful requests:"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			p.completed = &n
		}
	}
	if v, ok := strings.CutPrefix(line, "Output token throughput (tok/s):"); ok {
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			p.throughput = &f
		}
	}
}

// Check says whether b holds what the bench printed: the same completed
// count and output throughput (printed to two decimals).
func (p *Printed) Check(b BenchResult) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.completed == nil || p.throughput == nil {
		return fmt.Errorf("%w: the bench printed no result table (Successful requests, Output token throughput) to check its file against", ErrNotOwn)
	}
	if *p.completed != b.Completed || math.Abs(*p.throughput-b.OutputThroughput) > 0.0051 {
		return fmt.Errorf("%w: the result file says %d requests at %.2f output tok/s, the bench printed %d at %.2f", ErrNotOwn,
			b.Completed, b.OutputThroughput, *p.completed, *p.throughput)
	}
	return nil
}
