package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
)

// canonicalOrder is the key order of serve.py, used to place keys that a
// result did not read from a file.
var canonicalOrder = func() map[string]int {
	keys := []string{
		"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
		"request_rate", "burstiness", "max_concurrency",
		"ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps",
		"duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
		"request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
		"input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times",
		"generated_texts", "errors", "max_output_tokens_per_s", "max_concurrent_requests", "rtfx",
		"probe_completed", "probe_failed", "probe_median_e2el_ms", "probe_p99_e2el_ms", "probe_max_e2el_ms",
		"rps_change_events",
		"spec_decode_acceptance_rate", "spec_decode_acceptance_length", "spec_decode_num_drafts",
		"spec_decode_draft_tokens", "spec_decode_accepted_tokens", "spec_decode_per_position_acceptance_rates",
	}
	for _, metric := range []string{"ttft", "tpot", "itl", "e2el"} {
		for _, stat := range latencyStats {
			keys = append(keys, latencyKey(stat, metric))
		}
	}
	rank := make(map[string]int, len(keys))
	for i, k := range keys {
		rank[k] = i
	}
	return rank
}()

// MarshalJSON writes the result in vLLM's layout: the keys of Order first,
// then any other key where serve.py would put it. Typed fields win over Raw
// for their keys, so edits to them are written.
func (b BenchResult) MarshalJSON() ([]byte, error) {
	typed, err := b.typedMembers()
	if err != nil {
		return nil, err
	}
	values := make(map[string]json.RawMessage, len(b.Raw)+len(typed))
	for k, v := range b.Raw {
		values[k] = v
	}
	for k, v := range typed {
		// An unchanged value keeps its spelling (50.0 stays 50.0).
		if old, ok := b.Raw[k]; !ok || !sameJSON(old, v) {
			values[k] = v
		}
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range layout(b.Order, values) {
		if i > 0 {
			buf.WriteByte(',')
		}
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		buf.Write(key)
		buf.WriteByte(':')
		if err := json.Compact(&buf, values[k]); err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// typedMembers encodes the typed fields under their vLLM keys.
func (b BenchResult) typedMembers() (map[string]json.RawMessage, error) {
	ms := &members{m: map[string]json.RawMessage{}}
	put := ms.put
	// Keys that a file may lack are written only if it had them or they
	// carry information, so that a parsed file round-trips unchanged.
	_, hasBackend := b.Raw[keyBackend]
	_, hasEndpoint := b.Raw[keyEndpointType]
	_, hasFailed := b.Raw[keyFailed]
	backend, endpointType := b.Backend, b.EndpointType
	if backend == "" {
		backend = endpointType
	}
	if endpointType == "" {
		endpointType = backend
	}
	put(keyDate, b.Date)
	if hasEndpoint || !hasBackend {
		put(keyEndpointType, endpointType)
	}
	if hasBackend || !hasEndpoint {
		put(keyBackend, backend)
	}
	put(keyModelID, b.ModelID)
	put(keyNumPrompts, b.NumPrompts)
	if math.IsInf(b.RequestRate, 1) {
		put(keyRequestRate, "inf")
	} else {
		put(keyRequestRate, b.RequestRate)
	}
	put(keyMaxConcurrency, b.MaxConcurrency)
	put(keyDuration, b.Duration)
	put(keyCompleted, b.Completed)
	if hasFailed || b.Failed != 0 {
		put(keyFailed, b.Failed)
	}
	put(keyTotalInputTokens, b.TotalInputTokens)
	put(keyTotalOutputTokens, b.TotalOutputTokens)
	put(keyRequestThroughput, b.RequestThroughput)
	put(keyOutputThroughput, b.OutputThroughput)
	put(keyTotalTokenThroughput, b.TotalTokenThroughput)
	ms.latency("ttft", b.TTFT)
	ms.latency("tpot", b.TPOT)
	ms.latency("itl", b.ITL)
	if b.E2EL != nil {
		ms.latency("e2el", *b.E2EL)
	}
	b.specDecodeMembers(ms)
	if err := errors.Join(ms.errs...); err != nil {
		return nil, fmt.Errorf("marshal vllm bench result: %w", err)
	}
	return ms.m, nil
}

// specDecodeMembers encodes the speculative decoding metrics the result
// has.
func (b BenchResult) specDecodeMembers(ms *members) {
	if b.SpecDecodeAcceptanceRate != nil {
		ms.put(keySpecAcceptanceRate, *b.SpecDecodeAcceptanceRate)
	}
	if b.SpecDecodeAcceptanceLength != nil {
		ms.put(keySpecAcceptanceLength, *b.SpecDecodeAcceptanceLength)
	}
	if b.SpecDecodePerPositionAcceptanceRates != nil {
		for i, v := range b.SpecDecodePerPositionAcceptanceRates {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				ms.errs = append(ms.errs, fmt.Errorf("key %q: element %d: %v is not a JSON number", keySpecPerPosition, i, v))
			}
		}
		ms.put(keySpecPerPosition, b.SpecDecodePerPositionAcceptanceRates)
	}
}

// members are encoded JSON members by key, and the values that could not
// be encoded.
type members struct {
	m    map[string]json.RawMessage
	errs []error
}

// put encodes v under key; NaN and infinities are no JSON numbers.
func (ms *members) put(key string, v any) {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		ms.errs = append(ms.errs, fmt.Errorf("key %q: %v is not a JSON number", key, f))
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		ms.errs = append(ms.errs, fmt.Errorf("key %q: %w", key, err))
		return
	}
	ms.m[key] = raw
}

// latency encodes a latency metric's statistics under vLLM's keys.
func (ms *members) latency(metric string, l LatencyStats) {
	for i, v := range []float64{l.Mean, l.Median, l.Std, l.P99} {
		ms.put(latencyKey(latencyStats[i], metric), v)
	}
}

// layout orders the keys of values: those of order first, as given; every
// other key goes after the last key that serve.py writes before it, and keys
// serve.py does not know go last in name order.
func layout(order []string, values map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(values))
	seen := make(map[string]bool, len(values))
	for _, k := range order {
		if _, ok := values[k]; ok && !seen[k] {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	var extra, unknown []string
	for k := range values {
		switch _, known := canonicalOrder[k]; {
		case seen[k]:
		case known:
			extra = append(extra, k)
		default:
			unknown = append(unknown, k)
		}
	}
	slices.SortFunc(extra, func(a, b string) int { return canonicalOrder[a] - canonicalOrder[b] })
	for _, k := range extra {
		at := 0 // insert after the last key that serve.py writes earlier
		for i, existing := range keys {
			if r, ok := canonicalOrder[existing]; ok && r < canonicalOrder[k] {
				at = i + 1
			}
		}
		keys = append(keys[:at], append([]string{k}, keys[at:]...)...)
	}
	slices.Sort(unknown)
	return append(keys, unknown...)
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
