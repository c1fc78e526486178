package results_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/results"
)

func TestPrinted(t *testing.T) {
	t.Parallel()
	table := "============ Serving Benchmark Result ============\nSuccessful requests:                     8         \nOutput token throughput (tok/s):         2869.46   \n"
	p := &results.Printed{}
	// Written in pieces, as a pipe delivers it.
	if _, err := io.Copy(p, iotestHalf(table)); err != nil {
		t.Fatal(err)
	}
	if err := p.Check(results.BenchResult{Completed: 8, OutputThroughput: 2869.4612}); err != nil {
		t.Errorf("Check(the printed numbers) = %v", err)
	}
	for _, b := range []results.BenchResult{{Completed: 8, OutputThroughput: 99999}, {Completed: 7, OutputThroughput: 2869.46}} {
		if err := p.Check(b); !errors.Is(err, results.ErrNotOwn) {
			t.Errorf("Check(%+v) = %v, want ErrNotOwn", b, err)
		}
	}
	if err := (&results.Printed{}).Check(results.BenchResult{Completed: 8}); err == nil || !strings.Contains(err.Error(), "printed no result table") {
		t.Errorf("Check without a table = %v", err)
	}
}

// iotestHalf reads s a few bytes at a time.
func iotestHalf(s string) io.Reader { return &slow{s: s} }

type slow struct{ s string }

func (r *slow) Read(b []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(b[:min(len(b), 7)], r.s)
	r.s = r.s[n:]
	return n, nil
}
