package baseline

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Source gives past nights of a recipe: the Buildkite API in production,
// a fixture in tests.
type Source interface {
	Last(ctx context.Context, recipe, stepKey string, n int) (Result, error)
}

// Past is one past night with its summary parsed once.
type Past struct {
	Night
	Summary summary.Summary
}

// Nights is what History gives: the readable nights, newest first, and
// the builds missed on the way.
type Nights struct {
	Nights []Past
	Missed []Miss
	// Unreadable counts nights whose summary did not parse; they count as
	// missing.
	Unreadable int
}

// Passing are the nights whose job passed, newest first: what a gate
// comparing with another recipe's results (baseline_from) may compare
// with.
func (n Nights) Passing() []Past {
	var out []Past
	for _, p := range n.Nights {
		if !p.Failed {
			out = append(out, p)
		}
	}
	return out
}

// History is the one memoised view of past nights a run shares between its
// gates and its trend picture. The source is built once and every lookup
// made once, failures included: a missing token or a refusing API would
// only fail again, and each try may run buildkite-agent or call the API.
type History struct {
	build func(ctx context.Context) (Source, error)

	mu      sync.Mutex
	parsed  map[string]parsed // by recipe and build: a night read once
	built   bool
	src     Source
	srcErr  error
	fetched map[string]fetched
}

type parsed struct {
	s   summary.Summary
	err error
}

// parse reads a night's summary once, whichever lookups share the night
// (the gates ask for more nights than the trend picture).
func (h *History) parse(recipe string, night Night) (summary.Summary, error) {
	key := recipe + "#" + strconv.Itoa(night.BuildNumber)
	if p, ok := h.parsed[key]; ok && night.BuildNumber != 0 {
		return p.s, p.err
	}
	s, err := summary.Read(bytes.NewReader(night.Summary))
	if h.parsed == nil {
		h.parsed = map[string]parsed{}
	}
	h.parsed[key] = parsed{s, err}
	return s, err
}

type fetched struct {
	n   Nights
	err error
}

// NewHistory returns a History over the source build makes when first
// needed, so a recipe without baseline gates never needs a token. A nil
// build gives no baselines.
func NewHistory(build func(ctx context.Context) (Source, error)) *History {
	return &History{build: build}
}

// Last returns up to n of the recipe's last completed nightlies, failed
// ones among them (Night.Failed). Any error wraps ErrNoBaseline.
func (h *History) Last(ctx context.Context, recipe string, n int) (Nights, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := recipe + "/" + strconv.Itoa(n)
	if f, ok := h.fetched[key]; ok {
		return f.n, f.err
	}
	if h.build == nil {
		return Nights{}, fmt.Errorf("%w: no baseline source", ErrNoBaseline)
	}
	if !h.built {
		h.built = true
		h.src, h.srcErr = h.build(ctx)
	}
	if h.srcErr != nil {
		return Nights{}, fmt.Errorf("%w: %w", ErrNoBaseline, h.srcErr)
	}
	r, err := h.src.Last(ctx, recipe, contract.StepKey(recipe), n)
	out := Nights{Missed: r.Missed}
	for _, night := range r.Nights {
		s, perr := h.parse(recipe, night)
		if perr != nil {
			out.Unreadable++
			continue
		}
		out.Nights = append(out.Nights, Past{Night: night, Summary: s})
	}
	if err == nil && len(r.Nights) > 0 && len(out.Nights) == 0 {
		// Every night unreadable: say why, with the newest one's error.
		_, perr := summary.Read(bytes.NewReader(r.Nights[0].Summary))
		err = fmt.Errorf("%w: build %d: %w", ErrNoBaseline, r.Nights[0].BuildNumber, perr)
	}
	if h.fetched == nil {
		h.fetched = map[string]fetched{}
	}
	h.fetched[key] = fetched{out, err}
	return out, err
}
