// Package baselinetest is a canned baseline source for tests of the
// packages that judge runs against past nights.
package baselinetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Call is one request made for past nights.
type Call struct {
	Recipe, StepKey string
	N               int
}

// Source hands out canned nights per recipe, newest first, and records
// every request.
type Source struct {
	Nights map[string][]baseline.Night
	Err    error // returned by every Last

	mu    sync.Mutex
	calls []Call
}

// Last implements baseline.Source.
func (f *Source) Last(_ context.Context, recipe, stepKey string, n int) (baseline.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, Call{recipe, stepKey, n})
	f.mu.Unlock()
	if f.Err != nil {
		return baseline.Result{}, f.Err
	}
	nights := f.Nights[recipe]
	if len(nights) > n {
		nights = nights[:n]
	}
	if len(nights) == 0 {
		return baseline.Result{}, fmt.Errorf("%w: no passing night of %s", baseline.ErrNoBaseline, recipe)
	}
	return baseline.Result{Nights: nights}, nil
}

// Calls are the requests made so far.
func (f *Source) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// History is a baseline.History over f.
func (f *Source) History() *baseline.History {
	return baseline.NewHistory(func(context.Context) (baseline.Source, error) { return f, nil })
}

// Encode is s as the job uploaded it.
func Encode(t testing.TB, s summary.Summary) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := summary.Encode(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
