package summary

// BenchRun is the outcome of one benchmark configuration at one
// concurrency, the median over its repetitions.
type BenchRun struct {
	Name        string `json:"name"`
	Config      string `json:"config"`
	Concurrency int    `json:"concurrency"`
	NumPrompts  int    `json:"num_prompts"`
	InputLen    int    `json:"input_len,omitempty"`
	OutputLen   int    `json:"output_len,omitempty"`
	Repetitions int    `json:"repetitions"`
	// Reruns are the repetitions run again on alarm (counted in
	// Repetitions): the GPU time a flagged night cost.
	Reruns  int    `json:"reruns,omitempty"`
	Backend string `json:"backend,omitempty"`
	// Temperature is the bench's sampling temperature (0: greedy), which
	// speculative decoding's acceptance depends on.
	Temperature *float64 `json:"temperature,omitempty"`
	Status      string   `json:"status"`
	Error       string   `json:"error,omitempty"`
	File        string   `json:"file,omitempty"`

	RequestThroughput      float64 `json:"request_throughput"`
	OutputThroughput       float64 `json:"output_throughput"`
	TotalTokenThroughput   float64 `json:"total_token_throughput"`
	OutputThroughputPerGPU float64 `json:"output_throughput_per_gpu"`
	TotalThroughputPerGPU  float64 `json:"total_throughput_per_gpu"`

	TTFT Latency `json:"ttft_ms"`
	TPOT Latency `json:"tpot_ms"`
	ITL  Latency `json:"itl_ms"`
	E2EL Latency `json:"e2el_ms,omitzero"`

	SpecDecode *SpecDecode `json:"spec_decode,omitempty"`
	// Cost is what a million tokens cost at this run's throughput and the
	// profile's gpu_hour_price; nil without a price.
	Cost    *TokenCost         `json:"cost_per_mtok,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// RepetitionValues are the gated metrics' values of every repetition,
	// in order, when there were several: the regression detector judges
	// tonight by all of them, and people see their spread.
	RepetitionValues map[string][]float64 `json:"repetition_values,omitempty"`
}

// TokenCost is the cost of a million tokens, in the currency of the
// profile's gpu_hour_price, as InferenceX reports it: the GPUs' hourly
// price over the tokens of that kind an hour at the measured throughput.
// A kind with no throughput has no cost (nil).
type TokenCost struct {
	Input  *float64 `json:"input"`
	Output *float64 `json:"output"`
	Total  *float64 `json:"total"`
}

// PerMillionTokens is the cost of a million tokens made at tokPerSec on
// gpus GPUs of hourPrice each; nil when either is not positive.
func PerMillionTokens(hourPrice float64, gpus int, tokPerSec float64) *float64 {
	if hourPrice <= 0 || gpus <= 0 || tokPerSec <= 0 {
		return nil
	}
	c := hourPrice * float64(gpus) / (tokPerSec * 3600 / 1e6)
	return &c
}

// PriceTokens sets r.Cost from its throughputs; input throughput is the
// total less the output.
func (r *BenchRun) PriceTokens(hourPrice float64, gpus int) {
	if r.Status != StatusOK || hourPrice <= 0 || gpus <= 0 {
		return
	}
	c := &TokenCost{
		Input:  PerMillionTokens(hourPrice, gpus, r.TotalTokenThroughput-r.OutputThroughput),
		Output: PerMillionTokens(hourPrice, gpus, r.OutputThroughput),
		Total:  PerMillionTokens(hourPrice, gpus, r.TotalTokenThroughput),
	}
	if c.Input == nil && c.Output == nil && c.Total == nil {
		return
	}
	r.Cost = c
}

// Latency is one latency metric in milliseconds.
type Latency struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P99    float64 `json:"p99"`
}

// SpecDecode holds speculative-decoding acceptance statistics.
type SpecDecode struct {
	AcceptanceRate   float64   `json:"acceptance_rate"`
	AcceptanceLength float64   `json:"acceptance_length"`
	PerPosition      []float64 `json:"per_position,omitempty"`
}
