package results

import (
	"slices"
	"testing"

	"github.com/benchkite/benchkite/workloads"
)

// The measurement keys this package reads are keys that lint lets recipes
// gate on (workloads.AllBenchResultKeys, taken from vLLM's serve.py); if
// they drift apart, a gate could name a key that is never read, or the
// runner read one lint rejects.
func TestReadKeysAreBenchResultKeys(t *testing.T) {
	t.Parallel()
	known := workloads.AllBenchResultKeys()
	read := []string{
		keyDuration, keyCompleted, keyFailed, keyTotalInputTokens, keyTotalOutputTokens,
		keyRequestThroughput, keyOutputThroughput, keyTotalTokenThroughput,
		keySpecAcceptanceRate, keySpecAcceptanceLength,
	}
	for _, metric := range []string{"ttft", "tpot", "itl", "e2el"} {
		for _, stat := range latencyStats {
			read = append(read, latencyKey(stat, metric))
		}
	}
	for _, k := range read {
		if !slices.Contains(known, k) {
			t.Errorf("results reads %q, which workloads.AllBenchResultKeys() = %q lacks", k, known)
		}
	}
	// Every numeric key of serve.py's order is either known or a
	// configuration value, not a measurement.
	config := []string{"num_prompts", "request_rate", "burstiness", "max_concurrency", "ramp_up_start_rps", "ramp_up_end_rps",
		"spec_decode_per_position_acceptance_rates",
		"probe_completed", "probe_failed", "probe_median_e2el_ms", "probe_p99_e2el_ms", "probe_max_e2el_ms"}
	for k := range canonicalOrder {
		switch {
		case slices.Contains(known, k), slices.Contains(config, k):
		case slices.Contains([]string{"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "ramp_up_strategy",
			"input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times", "generated_texts", "errors", "rps_change_events"}, k):
			// Text or lists, never a gate.
		default:
			t.Errorf("serve.py key %q is in canonicalOrder but neither a gate key (workloads.AllBenchResultKeys) nor listed as configuration", k)
		}
	}
}
