package openai

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/pyjson"
)

// Stats is a snapshot of the server's counters.
type Stats struct {
	// Requests counts generation requests received, including failed ones.
	Requests                int64
	Running                 int64
	PromptTokens            int64
	GenerationTokens        int64
	SpecDrafts              int64
	SpecDraftTokens         int64
	SpecAcceptedTokens      int64
	SpecAcceptedPerPosition []int64
}

// counters are the Prometheus counters the fake exposes.
type counters struct {
	mu        sync.Mutex
	specK     int
	created   float64
	draftStep uint64

	running          int64
	promptTokens     int64
	generationTokens int64
	finished         map[string]int64
	drafts           int64
	draftTokens      int64
	accepted         int64
	acceptedPerPos   []int64
}

func newCounters(specK int) *counters {
	return &counters{
		specK:          specK,
		created:        float64(time.Now().UnixMicro()) / 1e6,
		finished:       map[string]int64{},
		acceptedPerPos: make([]int64, max(specK, 0)),
	}
}

// acceptanceRate is the long-run acceptance of draft position i. The rates
// fall with the position, like real drafters.
func acceptanceRate(i int) float64 { return 0.85 * math.Pow(0.75, float64(i)) }

// draft records one speculative step and returns how many of its draft
// tokens were accepted. A golden-ratio sequence drives acceptance so the
// pattern is deterministic yet spreads evenly; because one draw is compared
// against falling rates, acceptance is always a prefix of the draft.
func (c *counters) draft() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draftStep++
	u := math.Mod(float64(c.draftStep)*0.6180339887498949, 1)
	n := 0
	for n < c.specK && u < acceptanceRate(n) {
		c.acceptedPerPos[n]++
		n++
	}
	c.drafts++
	c.draftTokens += int64(c.specK)
	c.accepted += int64(n)
	return n
}

func (c *counters) add(field *int64, n int64) {
	c.mu.Lock()
	*field += n
	c.mu.Unlock()
}

func (c *counters) finish(reason string) {
	c.mu.Lock()
	c.finished[reason]++
	c.mu.Unlock()
}

func (c *counters) snapshot(requests int64) Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{
		Requests:                requests,
		Running:                 c.running,
		PromptTokens:            c.promptTokens,
		GenerationTokens:        c.generationTokens,
		SpecDrafts:              c.drafts,
		SpecDraftTokens:         c.draftTokens,
		SpecAcceptedTokens:      c.accepted,
		SpecAcceptedPerPosition: append([]int64(nil), c.acceptedPerPos...),
	}
}

// specTracker turns a choice's token stream into speculative drafts: the
// first token comes from prefill, then each draft yields accepted+1 tokens.
type specTracker struct {
	c       *counters
	started bool
	budget  int
}

func (s *specTracker) token() {
	if s.c.specK <= 0 {
		return
	}
	if !s.started {
		s.started = true
		return
	}
	if s.budget == 0 {
		s.budget = s.c.draft() + 1
	}
	s.budget--
}

// writePrometheus writes the counters in the text format prometheus_client
// produces: counters carry _total, with _created companions as gauges.
func (c *counters) writePrometheus(w io.Writer, model string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	base := fmt.Sprintf(`engine="0",model_name=%q`, model)
	p := promWriter{w: w, created: c.created}

	p.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", base, float64(c.running))
	p.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", base, 0)
	p.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", base, math.Min(float64(c.running)*0.01, 1))
	p.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", []sample{{base, float64(c.promptTokens)}})
	p.counter("vllm:generation_tokens", "Number of generation tokens processed.", []sample{{base, float64(c.generationTokens)}})
	var finished []sample
	for _, reason := range []string{"abort", "length", "stop"} {
		finished = append(finished, sample{fmt.Sprintf(`engine="0",finished_reason=%q,model_name=%q`, reason, model), float64(c.finished[reason])})
	}
	p.counter("vllm:request_success", "Count of successfully processed requests.", finished)
	if c.specK <= 0 {
		return
	}
	p.counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", []sample{{base, float64(c.drafts)}})
	p.counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.", []sample{{base, float64(c.draftTokens)}})
	p.counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.", []sample{{base, float64(c.accepted)}})
	var perPos []sample
	for i, v := range c.acceptedPerPos {
		perPos = append(perPos, sample{fmt.Sprintf(`%s,position="%d"`, base, i), float64(v)})
	}
	p.counter("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.", perPos)
}

type sample struct {
	labels string
	value  float64
}

type promWriter struct {
	w       io.Writer
	created float64
}

func (p promWriter) gauge(name, help, labels string, v float64) {
	fmt.Fprintf(p.w, "# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n", name, help, name, name, labels, promFloat(v))
}

func (p promWriter) counter(name, help string, samples []sample) {
	fmt.Fprintf(p.w, "# HELP %s_total %s\n# TYPE %s_total counter\n", name, help, name)
	for _, s := range samples {
		fmt.Fprintf(p.w, "%s_total{%s} %s\n", name, s.labels, promFloat(s.value))
	}
	fmt.Fprintf(p.w, "# HELP %s_created %s\n# TYPE %s_created gauge\n", name, help, name)
	for _, s := range samples {
		fmt.Fprintf(p.w, "%s_created{%s} %s\n", name, s.labels, promFloat(p.created))
	}
}

// promFloat formats like prometheus_client's floatToGoString: Python repr,
// except that large values switch to Go-style exponent notation.
func promFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	s := pyjson.FormatFloat(v)
	dot := strings.IndexByte(s, '.')
	if v > 0 && dot > 6 {
		mantissa := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return fmt.Sprintf("%se+0%d", mantissa, dot-1)
	}
	return s
}
