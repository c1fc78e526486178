package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/pyjson"
)

// report prints the summary block with serve.py's exact format strings:
// "{:<40} {:<10}" for ints, "{:<40} {:<10.2f}" for floats, headers centred
// in 50 characters.
type report struct {
	w io.Writer
	o benchOptions
}

func (r *report) center(title string, fill byte) {
	pad := max(50-len(title), 0)
	left := pad / 2
	fmt.Fprintf(r.w, "%s%s%s\n", strings.Repeat(string(fill), left), title, strings.Repeat(string(fill), pad-left))
}

func (r *report) intRow(label string, v int64) { fmt.Fprintf(r.w, "%-40s %-10d\n", label, v) }

func (r *report) floatRow(label string, v float64) { fmt.Fprintf(r.w, "%-40s %-10.2f\n", label, v) }

func (r *report) header(m benchMetrics, duration float64, noTokenizer bool) {
	r.center(" Serving Benchmark Result ", '=')
	r.intRow("Successful requests:", int64(m.completed))
	r.intRow("Failed requests:", int64(m.failed))
	if r.o.maxConcurrency != nil {
		r.intRow("Maximum request concurrency:", int64(*r.o.maxConcurrency))
	}
	if !math.IsInf(r.o.requestRate, 1) {
		r.floatRow("Request rate configured (RPS):", r.o.requestRate)
	}
	r.floatRow("Benchmark duration (s):", duration)
	r.intRow("Total input tokens:", int64(m.totalInput))
	if !noTokenizer {
		r.intRow("Total generated tokens:", int64(m.totalOutput))
	}
	r.floatRow("Request throughput (req/s):", m.requestThroughput)
	if len(r.o.goodput) > 0 {
		r.floatRow("Request goodput (req/s):", m.requestGoodput)
	}
	if !noTokenizer {
		r.floatRow("Output token throughput (tok/s):", m.outputThroughput)
		r.floatRow("Peak output token throughput (tok/s):", m.maxOutputTokensPerSecond)
	}
	r.floatRow("Peak concurrent requests:", float64(m.maxConcurrentRequests))
	if !noTokenizer {
		r.floatRow("Total token throughput (tok/s):", m.totalTokenThroughput)
	}
}

// metric prints one latency section and adds its keys, if it was selected
// with --percentile-metrics.
func (r *report) metric(res *pyjson.Object, attr, name, title string, s summary) {
	if !slices.Contains(r.o.percentileMetrics, attr) {
		return
	}
	r.center(title, '-')
	r.floatRow(fmt.Sprintf("Mean %s (ms):", name), s.mean)
	r.floatRow(fmt.Sprintf("Median %s (ms):", name), s.median)
	res.Set("mean_"+attr+"_ms", s.mean).Set("median_"+attr+"_ms", s.median).Set("std_"+attr+"_ms", s.std)
	for i, p := range r.o.percentiles {
		word := pyjson.FormatFloat(p)
		if p == math.Trunc(p) {
			word = fmt.Sprint(int64(p))
		}
		r.floatRow(fmt.Sprintf("P%s %s (ms):", word, name), s.percentiles[i])
		res.Set("p"+word+"_"+attr+"_ms", s.percentiles[i])
	}
}

func (r *report) spec(s *specStats) {
	if s == nil {
		return
	}
	r.center("Speculative Decoding", '-')
	r.floatRow("Acceptance rate (%):", s.acceptanceRate)
	r.floatRow("Acceptance length:", s.acceptanceLength)
	r.intRow("Drafts:", s.drafts)
	r.intRow("Draft tokens:", s.draftTokens)
	r.intRow("Accepted tokens:", s.accepted)
	if len(s.perPosition) > 0 {
		fmt.Fprintln(r.w, "Per-position acceptance (%):")
		for i, rate := range s.perPosition {
			r.floatRow(fmt.Sprintf("  Position %d:", i), rate*100)
		}
	}
}

// latencies prints and records the latency summaries: the token latencies
// when there is a tokenizer, end to end, and under --max-concurrency the
// client's queueing.
func (r *report) latencies(res *pyjson.Object, m benchMetrics, outs []requestOutput, noTokenizer bool) {
	if !noTokenizer {
		r.metric(res, "ttft", "TTFT", "Time to First Token", m.ttft)
		r.metric(res, "tpot", "TPOT", "Time per Output Token (excl. 1st token)", m.tpot)
		r.metric(res, "itl", "ITL", "Inter-token Latency", m.itl)
	}
	r.metric(res, "e2el", "E2EL", "End-to-end Latency", m.e2el)
	if r.o.maxConcurrency == nil {
		return
	}
	var queued, inclQueue []float64
	for _, out := range outs {
		if out.success {
			queued = append(queued, out.queueTime)
			inclQueue = append(inclQueue, out.latency+out.queueTime)
		}
	}
	r.metric(res, "client_queue_time", "Client Queue Time", "Client-side Queueing", summarize(queued, r.o.percentiles))
	if !math.IsInf(r.o.requestRate, 1) {
		r.metric(res, "e2el_including_client_queue", "E2EL incl. Client Queue", "Queue-inclusive End-to-end Latency", summarize(inclQueue, r.o.percentiles))
	}
}
