// Package startup reads the server's start-up out of vLLM's own log: how
// long loading the weights, the model, torch.compile, CUDA graph capture
// and the engine's initialisation (profiling, KV cache, warm-up) took,
// each as vLLM says it. A process per engine (data parallel) or worker
// (tensor parallel) says it once each; the slowest decides when the
// server is ready, so the longest is kept.
package startup

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/benchkite/benchkite/runner/internal/linecut"

	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Parser is an io.Writer over the server's output that keeps the times.
// It is safe for concurrent use.
type Parser struct {
	mu    sync.Mutex
	split linecut.Splitter
	got   summary.Startup
}

// lines are vLLM 0.26.0's messages (testdata/vllm-0.26.0), each with the
// number it gives in seconds, and where the number goes.
var lines = []struct {
	re  *regexp.Regexp
	set func(*summary.Startup) **float64
}{
	// [default_loader.py:430] Loading weights took 0.01 seconds
	{regexp.MustCompile(`\bLoading weights took ([0-9.]+) seconds\b`), func(s *summary.Startup) **float64 { return &s.WeightsSeconds }},
	// [model_runner.py:305] Model loading took 0.01 GiB and 1.298398 seconds
	// [gpu_model_runner.py:5347] Model loading took 0.01 GiB memory and 0.226004 seconds
	{regexp.MustCompile(`\bModel loading took [0-9.]+ GiB(?: memory)? and ([0-9.]+) seconds\b`), func(s *summary.Startup) **float64 { return &s.ModelLoadSeconds }},
	// [monitor.py:53] torch.compile took 12.01 s in total
	{regexp.MustCompile(`\btorch\.compile took ([0-9.]+) s in total\b`), func(s *summary.Startup) **float64 { return &s.TorchCompileSeconds }},
	// [model_runner.py:747] Graph capturing finished in 1 secs, took 0.15 GiB
	{regexp.MustCompile(`\bGraph capturing finished in ([0-9.]+) secs\b`), func(s *summary.Startup) **float64 { return &s.CUDAGraphsSeconds }},
	// [core.py:340] init engine (profile, create kv cache, warmup model) took 107.59 s (compilation: 12.01 s)
	{regexp.MustCompile(`\binit engine \(profile, create kv cache, warmup model\) took ([0-9.]+) s\b`), func(s *summary.Startup) **float64 { return &s.EngineInitSeconds }},
}

// Write never fails.
func (p *Parser) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.split.Write(b, func(b []byte) { p.line(b) })
	return len(b), nil
}

func (p *Parser) line(l []byte) {
	for _, m := range lines {
		sub := m.re.FindSubmatch(l)
		if sub == nil {
			continue
		}
		v, err := strconv.ParseFloat(string(sub[1]), 64)
		if err != nil {
			return
		}
		if f := m.set(&p.got); *f == nil || v > **f {
			*f = &v
		}
		return
	}
}

// Times is what the log said so far; ReadySeconds is the caller's.
func (p *Parser) Times() summary.Startup {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.got
	for _, m := range lines {
		if f := m.set(&s); *f != nil {
			v := **f
			*f = &v
		}
	}
	return s
}

// Describe is s in one line, the parts in the order vLLM goes through
// them: "ready in 132.0 s: weights 0.01 s, model loading 1.81 s,
// torch.compile 12.01 s, CUDA graphs 1 s, engine init 107.59 s".
func Describe(s summary.Startup) string {
	out := "ready in " + numfmt.Thousands(s.ReadySeconds, 1) + " s"
	var parts []string
	for _, p := range []struct {
		name string
		v    *float64
	}{
		{"weights", s.WeightsSeconds}, {"model loading", s.ModelLoadSeconds}, {"torch.compile", s.TorchCompileSeconds},
		{"CUDA graphs", s.CUDAGraphsSeconds}, {"engine init", s.EngineInitSeconds},
	} {
		if p.v != nil {
			// As vLLM's log wrote it.
			parts = append(parts, p.name+" "+numfmt.Exact(*p.v)+" s")
		}
	}
	if len(parts) == 0 {
		return out + " (vLLM's log did not split it)"
	}
	return out + ": " + strings.Join(parts, ", ")
}
