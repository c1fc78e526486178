package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
)

// ErrMissingKey marks a required key absent from a result file.
var ErrMissingKey = errors.New("missing key")

// ErrIncomplete marks a benchmark run in which not every prompt completed.
var ErrIncomplete = errors.New("incomplete benchmark run")

// LatencyStats is one latency metric of a benchmark run, in milliseconds.
type LatencyStats struct {
	Mean   float64
	Median float64
	Std    float64
	P99    float64
}

// BenchResult is the result file of one `vllm bench serve --save-result` run.
//
// The typed fields are the keys every supported vLLM version writes, plus the
// optional ones the runner reports on. Numeric and Raw see every top-level
// key, so nothing is lost when vLLM adds keys.
type BenchResult struct {
	Date         string // "20260821-143015", local time of the bench client
	Backend      string
	EndpointType string // older name of Backend; each defaults to the other
	ModelID      string
	NumPrompts   int

	// RequestRate is the configured rate in requests/s; vLLM writes the
	// string "inf" for an unthrottled run, held here as math.Inf(1).
	RequestRate    float64
	MaxConcurrency *int // nil when unlimited

	Duration             float64 // seconds
	Completed            int
	Failed               int // 0 when the key is absent (vLLM before 0.13)
	TotalInputTokens     int
	TotalOutputTokens    int
	RequestThroughput    float64 // requests/s
	OutputThroughput     float64 // tokens/s
	TotalTokenThroughput float64 // tokens/s

	TTFT LatencyStats
	TPOT LatencyStats
	ITL  LatencyStats
	// E2EL is nil unless mean, median, std and p99 of e2el are all numbers;
	// vLLM writes them only with --percentile-metrics including e2el.
	E2EL *LatencyStats

	// Speculative decoding; nil when the server reported no drafts.
	SpecDecodeAcceptanceRate             *float64  // percent, 0-100
	SpecDecodeAcceptanceLength           *float64  // tokens per draft, bonus token included
	SpecDecodePerPositionAcceptanceRates []float64 // fractions, 0-1

	// Numeric holds every top-level key whose value is a JSON number,
	// including those typed above ("inf" is a string and so absent).
	Numeric map[string]float64
	// Raw holds every top-level key as read.
	Raw map[string]json.RawMessage
	// Order is the key order of the file; MarshalJSON follows it.
	Order []string
}

// JSON keys of the typed fields.
const (
	keyDate                 = "date"
	keyEndpointType         = "endpoint_type"
	keyBackend              = "backend"
	keyModelID              = "model_id"
	keyNumPrompts           = "num_prompts"
	keyRequestRate          = "request_rate"
	keyMaxConcurrency       = "max_concurrency"
	keyDuration             = "duration"
	keyCompleted            = "completed"
	keyFailed               = "failed"
	keyTotalInputTokens     = "total_input_tokens"
	keyTotalOutputTokens    = "total_output_tokens"
	keyRequestThroughput    = "request_throughput"
	keyOutputThroughput     = "output_throughput"
	keyTotalTokenThroughput = "total_token_throughput"
	keySpecAcceptanceRate   = "spec_decode_acceptance_rate"
	keySpecAcceptanceLength = "spec_decode_acceptance_length"
	keySpecPerPosition      = "spec_decode_per_position_acceptance_rates"
)

var latencyStats = []string{"mean", "median", "std", "p99"}

// latencyKey names a latency statistic, e.g. ("p99", "ttft") → "p99_ttft_ms".
func latencyKey(stat, metric string) string { return stat + "_" + metric + "_ms" }

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

// ParseBench reads a vLLM bench result. For a JSON-lines file written with
// --append-result it returns the last object.
func ParseBench(r io.Reader) (BenchResult, error) {
	return parseReader(r, benchWhat, parseBench)
}

// ParseBenchFile is ParseBench on the named file; errors name the file.
func ParseBenchFile(path string) (BenchResult, error) {
	return parseFile(path, benchWhat, parseBench)
}

// benchWhat names a bench result in errors.
const benchWhat = "vllm bench result"

func parseBench(r io.Reader) (BenchResult, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return BenchResult{}, err
	}
	last, err := lastValue(sanitizePythonJSON(data))
	if err != nil {
		return BenchResult{}, err
	}
	return decodeBench(last)
}

// UnmarshalJSON decodes one result object, with the rules of ParseBench.
func (b *BenchResult) UnmarshalJSON(data []byte) error {
	decoded, err := decodeBench(data)
	if err != nil {
		return err
	}
	*b = decoded
	return nil
}

func decodeBench(data []byte) (BenchResult, error) {
	obj, err := decodeObject(data)
	if err != nil {
		return BenchResult{}, err
	}
	f := fieldReader{values: obj.values}
	for _, k := range obj.keys {
		if err := plausible(obj.values[k]); err != nil {
			f.errs = append(f.errs, fmt.Errorf("key %q: %w", k, err))
		}
	}
	b := BenchResult{
		Date:                 f.string(keyDate),
		ModelID:              f.string(keyModelID),
		NumPrompts:           f.int(keyNumPrompts),
		RequestRate:          f.requestRate(),
		MaxConcurrency:       f.optInt(keyMaxConcurrency),
		Duration:             f.float(keyDuration),
		Completed:            f.int(keyCompleted),
		TotalInputTokens:     f.int(keyTotalInputTokens),
		TotalOutputTokens:    f.int(keyTotalOutputTokens),
		RequestThroughput:    f.float(keyRequestThroughput),
		OutputThroughput:     f.float(keyOutputThroughput),
		TotalTokenThroughput: f.float(keyTotalTokenThroughput),
		TTFT:                 f.latency("ttft"),
		TPOT:                 f.latency("tpot"),
		ITL:                  f.latency("itl"),

		SpecDecodeAcceptanceRate:             f.optFloat(keySpecAcceptanceRate),
		SpecDecodeAcceptanceLength:           f.optFloat(keySpecAcceptanceLength),
		SpecDecodePerPositionAcceptanceRates: f.optFloats(keySpecPerPosition),

		Numeric: map[string]float64{},
		Raw:     obj.values,
		Order:   obj.keys,
	}
	b.Backend, b.EndpointType = f.backend()
	if failed := f.optInt(keyFailed); failed != nil {
		b.Failed = *failed
	}
	if f.hasAll("e2el") {
		e2el := f.latency("e2el")
		b.E2EL = &e2el
	}
	if err := errors.Join(f.errs...); err != nil {
		return BenchResult{}, err
	}
	for k, raw := range obj.values {
		if v, ok := number(raw); ok {
			b.Numeric[k] = v
		}
	}
	return b, nil
}

// Valid reports whether the run served every one of numPrompts prompts
// without a failure; the error wraps ErrIncomplete and says what was short.
func (b BenchResult) Valid(numPrompts int) error {
	var problems []string
	if b.Completed != numPrompts {
		problems = append(problems, fmt.Sprintf("completed %d of %d prompts", b.Completed, numPrompts))
	}
	if b.Failed != 0 {
		problems = append(problems, fmt.Sprintf("%d requests failed", b.Failed))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrIncomplete, strings.Join(problems, ", "))
	}
	return nil
}

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

// fieldReader reads typed fields from an object, collecting every problem.
type fieldReader struct {
	values map[string]json.RawMessage
	errs   []error
}

func (f *fieldReader) required(key string) (json.RawMessage, bool) {
	raw, ok := f.values[key]
	if !ok {
		f.errs = append(f.errs, fmt.Errorf("%w %q", ErrMissingKey, key))
	}
	return raw, ok
}

func (f *fieldReader) wrongType(key, want string, raw json.RawMessage) {
	f.errs = append(f.errs, fmt.Errorf("key %q: want %s, got %s", key, want, kind(raw)))
}

func (f *fieldReader) string(key string) string {
	raw, ok := f.required(key)
	if !ok {
		return ""
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		f.wrongType(key, "a string", raw)
	}
	return s
}

func (f *fieldReader) float(key string) float64 {
	raw, ok := f.required(key)
	if !ok {
		return 0
	}
	v, ok := number(raw)
	if !ok {
		f.wrongType(key, "a number", raw)
	}
	return v
}

func (f *fieldReader) int(key string) int {
	raw, ok := f.required(key)
	if !ok {
		return 0
	}
	v, ok := integer(raw)
	if !ok {
		f.wrongType(key, "a whole number", raw)
	}
	return v
}

// optInt reads a whole number that may be absent or null.
func (f *fieldReader) optInt(key string) *int {
	raw, ok := f.values[key]
	if !ok || string(raw) == "null" {
		return nil
	}
	v, ok := integer(raw)
	if !ok {
		f.wrongType(key, "a whole number or null", raw)
		return nil
	}
	return &v
}

// optFloat reads a number that may be absent or null.
func (f *fieldReader) optFloat(key string) *float64 {
	raw, ok := f.values[key]
	if !ok || string(raw) == "null" {
		return nil
	}
	v, ok := number(raw)
	if !ok {
		f.wrongType(key, "a number or null", raw)
		return nil
	}
	return &v
}

// optFloats reads an array of numbers that may be absent or null.
func (f *fieldReader) optFloats(key string) []float64 {
	raw, ok := f.values[key]
	if !ok || string(raw) == "null" {
		return nil
	}
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		f.wrongType(key, "an array of numbers", raw)
		return nil
	}
	out := make([]float64, len(elems))
	for i, e := range elems {
		v, ok := number(e)
		if !ok {
			f.errs = append(f.errs, fmt.Errorf("key %q: element %d: want a number, got %s", key, i, kind(e)))
			return nil
		}
		if err := CheckValue(v); err != nil {
			f.errs = append(f.errs, fmt.Errorf("key %q: element %d: %w", key, i, err))
			return nil
		}
		out[i] = v
	}
	return out
}

// requestRate reads a number or the string "inf".
func (f *fieldReader) requestRate() float64 {
	raw, ok := f.required(keyRequestRate)
	if !ok {
		return 0
	}
	if v, ok := number(raw); ok {
		return v
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && strings.EqualFold(strings.TrimPrefix(s, "+"), "inf") {
		return math.Inf(1)
	}
	f.errs = append(f.errs, fmt.Errorf("key %q: want a number or \"inf\", got %s", keyRequestRate, raw))
	return 0
}

// backend reads backend and endpoint_type, of which vLLM has always written
// at least one; each stands in for the other.
func (f *fieldReader) backend() (backend, endpointType string) {
	_, hasBackend := f.values[keyBackend]
	_, hasEndpoint := f.values[keyEndpointType]
	switch {
	case hasBackend && hasEndpoint:
		return f.string(keyBackend), f.string(keyEndpointType)
	case hasBackend:
		backend = f.string(keyBackend)
		return backend, backend
	case hasEndpoint:
		endpointType = f.string(keyEndpointType)
		return endpointType, endpointType
	}
	f.errs = append(f.errs, fmt.Errorf("%w %q (or %q)", ErrMissingKey, keyBackend, keyEndpointType))
	return "", ""
}

func (f *fieldReader) latency(metric string) LatencyStats {
	return LatencyStats{
		Mean:   f.float(latencyKey("mean", metric)),
		Median: f.float(latencyKey("median", metric)),
		Std:    f.float(latencyKey("std", metric)),
		P99:    f.float(latencyKey("p99", metric)),
	}
}

// hasAll reports whether all statistics of metric are numbers.
func (f *fieldReader) hasAll(metric string) bool {
	for _, stat := range latencyStats {
		if _, ok := number(f.values[latencyKey(stat, metric)]); !ok {
			return false
		}
	}
	return true
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
