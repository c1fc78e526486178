package results

import (
	"encoding/json"
	"errors"
	"fmt"
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
