package workloads

import (
	"slices"
	"strconv"
	"strings"
)

// benchScalarKeys are the numeric top-level keys of the result file of
// `vllm bench serve --save-result` for a generation model, as
// benchmark() in vllm/benchmarks/serve.py builds its result dict. The keys
// of diffusion models and of probe requests are left out: the runner runs
// neither. runner/internal/results tests that it reads no key outside
// BenchResultKeys.
var benchScalarKeys = []string{
	"duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
	"request_throughput", "output_throughput", "total_token_throughput",
	"max_output_tokens_per_s", "max_concurrent_requests", "rtfx",
}

// benchGoodputKey is written as a number only with --goodput (else null).
const benchGoodputKey = "request_goodput"

// benchSpecKeys are written only when the server speculates.
var benchSpecKeys = []string{
	"spec_decode_acceptance_rate", "spec_decode_acceptance_length",
	"spec_decode_num_drafts", "spec_decode_draft_tokens", "spec_decode_accepted_tokens",
}

// DefaultPercentileMetrics is what the runner passes as
// --percentile-metrics when a config sets none.
const DefaultPercentileMetrics = "ttft,tpot,itl,e2el"

// defaultMetricPercentiles is vllm bench serve's --metric-percentiles.
const defaultMetricPercentiles = "99"

// BenchResultKeys returns the numeric keys a result of config c holds:
// the scalar keys, request_goodput with --goodput, the speculative
// decoding keys when speculative is set, and mean_/median_/std_/p<N>_
// <metric>_ms for each of its --percentile-metrics and
// --metric-percentiles (serve.py writes p99.9 as "p99.9", p99.0 as "p99").
func BenchResultKeys(c *BenchConfig, speculative bool) []string {
	keys := slices.Clone(benchScalarKeys)
	metrics, percentiles := DefaultPercentileMetrics, defaultMetricPercentiles
	for _, a := range c.Args {
		switch {
		case a.Flag == "--goodput":
			keys = append(keys, benchGoodputKey)
		case a.Flag == "--percentile-metrics" && len(a.Values) == 1:
			metrics = a.Values[0]
		case a.Flag == "--metric-percentiles" && len(a.Values) == 1:
			percentiles = a.Values[0]
		}
	}
	if speculative {
		keys = append(keys, benchSpecKeys...)
	}
	for _, m := range strings.Split(metrics, ",") {
		for _, stat := range []string{"mean", "median", "std"} {
			keys = append(keys, stat+"_"+m+"_ms")
		}
		for _, p := range strings.Split(percentiles, ",") {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				continue
			}
			keys = append(keys, "p"+strconv.FormatFloat(f, 'f', -1, 64)+"_"+m+"_ms")
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// AllBenchResultKeys is every key BenchResultKeys can return for vLLM's
// percentile metrics at the 99th percentile: what a reader of results may
// look for.
func AllBenchResultKeys() []string {
	c := &BenchConfig{Args: []BenchArg{
		{Flag: "--goodput"},
		{Flag: "--percentile-metrics", Values: []string{strings.Join(percentileMetrics, ",")}},
	}}
	return BenchResultKeys(c, true)
}
