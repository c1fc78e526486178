package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/pyjson"
)

// resultFile is the result file's object: what the run was asked for,
// the --metadata pairs, then benchmark's result, with the per-request
// lists only under --save-detailed.
func resultFile(o benchOptions, modelID, now string, result *pyjson.Object) *pyjson.Object {
	tokenizerID := any(nil)
	if !o.skipTokenizer {
		tokenizerID = orDefault(o.tokenizer, modelID)
	}
	out := pyjson.NewObject().
		Set("date", now).
		Set("endpoint_type", o.backend).
		Set("backend", o.backend).
		Set("label", o.label).
		Set("model_id", modelID).
		Set("tokenizer_id", tokenizerID).
		Set("num_prompts", o.numPrompts)
	for _, kv := range o.metadata {
		out.Set(kv[0], kv[1])
	}
	if math.IsInf(o.requestRate, 1) {
		out.Set("request_rate", "inf")
	} else {
		out.Set("request_rate", o.requestRate)
	}
	out.Set("burstiness", o.burstiness).Set("max_concurrency", o.maxConcurrency)
	for _, key := range result.Keys() {
		v, _ := result.Get(key)
		out.Set(key, v)
	}
	if !o.saveDetailed {
		for _, key := range []string{"input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors"} {
			out.Delete(key)
		}
	}
	return out
}

// writeOutcome saves the result file when asked to (and the
// FAKE_VLLM_BENCH_NO_OUTPUT knob allows), then kills the server the
// FAKE_VLLM_BENCH_KILL_PIDFILE knob names; it returns the exit status.
func writeOutcome(o benchOptions, modelID, now string, out *pyjson.Object, getenv func(string) string, stderr io.Writer) int {
	if (o.save || o.appendResult) && getenv(envBenchNoOutput) != "true" {
		if err := saveResult(o, modelID, now, out); err != nil {
			return pyError(stderr, "OSError", err.Error())
		}
	}
	if f := getenv(envBenchKillPidFile); f != "" {
		if err := killFromPidFile(f); err != nil {
			return pyError(stderr, "RuntimeError", err.Error())
		}
	}
	return 0
}

// benchResult is benchmark()'s result before the latency summaries: the
// totals and throughputs, the per-request lists and the speculative
// decoding counts.
func benchResult(o benchOptions, m benchMetrics, duration float64, outs []requestOutput, spec *specStats) *pyjson.Object {
	res := pyjson.NewObject().
		Set("duration", duration).
		Set("completed", m.completed).
		Set("failed", m.failed).
		Set("total_input_tokens", m.totalInput).
		Set("total_output_tokens", m.totalOutput).
		Set("request_throughput", m.requestThroughput)
	if len(o.goodput) > 0 {
		res.Set("request_goodput", m.requestGoodput)
	} else {
		res.Set("request_goodput", nil)
	}
	res.Set("output_throughput", m.outputThroughput).
		Set("total_token_throughput", m.totalTokenThroughput)
	setPerRequest(res, m, outs)
	res.Set("max_output_tokens_per_s", m.maxOutputTokensPerSecond).
		Set("max_concurrent_requests", m.maxConcurrentRequests).
		Set("rtfx", 0.0)
	if spec != nil {
		res.Set("spec_decode_acceptance_rate", spec.acceptanceRate).
			Set("spec_decode_acceptance_length", spec.acceptanceLength).
			Set("spec_decode_num_drafts", spec.drafts).
			Set("spec_decode_draft_tokens", spec.draftTokens).
			Set("spec_decode_accepted_tokens", spec.accepted).
			Set("spec_decode_per_position_acceptance_rates", spec.perPosition)
	}
	return res
}

// setPerRequest sets the lists of one value per request, in serve.py's
// order.
func setPerRequest(res *pyjson.Object, m benchMetrics, outs []requestOutput) {
	var inputLens, outputLens []int
	var ttfts, latencies, startTimes, queueTimes []float64
	var itls [][]float64
	var texts, errs []string
	for i, out := range outs {
		inputLens = append(inputLens, out.promptLen)
		outputLens = append(outputLens, m.outputLens[i])
		ttfts = append(ttfts, out.ttft)
		itls = append(itls, append([]float64{}, out.itl...))
		latencies = append(latencies, out.latency)
		startTimes = append(startTimes, out.startTime)
		queueTimes = append(queueTimes, out.queueTime)
		texts = append(texts, out.generatedText)
		errs = append(errs, out.err)
	}
	res.Set("input_lens", inputLens).Set("output_lens", outputLens).Set("ttfts", ttfts).Set("itls", itls).
		Set("latencies", latencies).Set("start_times", startTimes).Set("queue_times", queueTimes).
		Set("generated_texts", texts).Set("errors", errs)
}

// saveResult writes the result as json.dump does (one line), appending
// with a newline separator under --append-result.
func saveResult(o benchOptions, modelID, now string, result *pyjson.Object) error {
	name := o.resultFilename
	if name == "" {
		label := o.backend
		if o.label != nil && *o.label != "" {
			label = *o.label
		}
		conc := ""
		if o.maxConcurrency != nil {
			conc = fmt.Sprintf("-concurrency%d", *o.maxConcurrency)
		}
		parts := strings.Split(modelID, "/")
		name = fmt.Sprintf("%s-%sqps%s-%s-%s.json", label, pyFloatStr(o.requestRate), conc, parts[len(parts)-1], now)
	}
	if o.resultDir != "" {
		if err := os.MkdirAll(o.resultDir, 0o755); err != nil {
			return fmt.Errorf("create result dir: %w", err)
		}
		name = filepath.Join(o.resultDir, name)
	}
	data, err := pyjson.Marshal(result, pyjson.Options{EnsureASCII: true})
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if o.appendResult {
		flags = os.O_RDWR | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil {
		return fmt.Errorf("open result file: %w", err)
	}
	if o.appendResult {
		if st, err := f.Stat(); err == nil && st.Size() > 0 {
			data = append([]byte("\n"), data...)
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write result file: %w", err)
	}
	return f.Close()
}
