package summary

import (
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/results"
)

// FromBench turns a (median) bench result into a BenchRun named name with
// Status "ok". Per-GPU throughputs divide by numGPUs and stay 0 if it is not
// positive. InputLen and OutputLen are taken from the result's input_len and
// output_len keys when the runner recorded them with --metadata. Config,
// Repetitions and File are left to the caller, as is downgrading Status
// when b.Valid fails.
func FromBench(name string, b results.BenchResult, numGPUs int) BenchRun {
	run := BenchRun{
		Name:                 name,
		NumPrompts:           b.NumPrompts,
		Backend:              b.Backend,
		Status:               StatusOK,
		RequestThroughput:    b.RequestThroughput,
		OutputThroughput:     b.OutputThroughput,
		TotalTokenThroughput: b.TotalTokenThroughput,
		TTFT:                 latency(b.TTFT),
		TPOT:                 latency(b.TPOT),
		ITL:                  latency(b.ITL),
		Metrics:              maps.Clone(b.Numeric),
	}
	if b.MaxConcurrency != nil {
		run.Concurrency = *b.MaxConcurrency
	}
	run.InputLen, _ = metadataInt(b.Raw["input_len"])
	run.OutputLen, _ = metadataInt(b.Raw["output_len"])
	if numGPUs > 0 {
		run.OutputThroughputPerGPU = b.OutputThroughput / float64(numGPUs)
		run.TotalThroughputPerGPU = b.TotalTokenThroughput / float64(numGPUs)
	}
	if b.E2EL != nil {
		run.E2EL = latency(*b.E2EL)
	}
	if b.SpecDecodeAcceptanceRate != nil || b.SpecDecodeAcceptanceLength != nil || b.SpecDecodePerPositionAcceptanceRates != nil {
		spec := &SpecDecode{PerPosition: append([]float64(nil), b.SpecDecodePerPositionAcceptanceRates...)}
		if b.SpecDecodeAcceptanceRate != nil {
			spec.AcceptanceRate = *b.SpecDecodeAcceptanceRate
		}
		if b.SpecDecodeAcceptanceLength != nil {
			spec.AcceptanceLength = *b.SpecDecodeAcceptanceLength
		}
		run.SpecDecode = spec
	}
	return run
}

func latency(l results.LatencyStats) Latency {
	return Latency{Mean: l.Mean, Median: l.Median, P99: l.P99}
}

// metadataInt reads a whole number written as a JSON number or, as
// `vllm bench serve --metadata` does, as a string.
func metadataInt(raw json.RawMessage) (int, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func sortedStrings(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FromLMEval turns the metrics of task in r into a TaskResult with Status
// "ok", or "failed" if r has no such task or one of its scores is not a
// finite number (NaN, Infinity, a string). NumFewshot is the n-shot r
// reports for the task, falling back to fewshot; Samples is the effective
// document count. File is left to the caller.
func FromLMEval(task string, fewshot int, r results.LMEvalResult) TaskResult {
	res := TaskResult{Task: task, NumFewshot: fewshot, Status: StatusOK}
	if n, ok := r.NShot[task]; ok {
		res.NumFewshot = n
	}
	t, ok := r.Tasks[task]
	if !ok {
		res.Status = StatusFailed
		res.Error = fmt.Sprintf("task %q not in lm_eval results", task)
		return res
	}
	if len(t.Invalid) > 0 {
		res.Status = StatusFailed
		var bad []string
		for _, k := range sortedStrings(t.Invalid) {
			bad = append(bad, fmt.Sprintf("key %q of task %q is %s, not a number", k, task, t.Invalid[k]))
		}
		res.Error = strings.Join(bad, "; ")
	}
	res.Metrics = maps.Clone(t.Metrics)
	res.Stderr = maps.Clone(t.Stderr)
	res.Samples = t.SampleLen
	if n, ok := r.NSamples[task]; ok && n.Effective > 0 {
		res.Samples = n.Effective
	}
	return res
}
