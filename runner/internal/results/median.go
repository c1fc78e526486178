package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrEvenRepetitions marks a MedianOf call without a single middle run.
var ErrEvenRepetitions = errors.New("median needs an odd number of repetitions")

// ErrIdentityMismatch marks repetitions that did not measure the same thing.
var ErrIdentityMismatch = errors.New("repetitions differ")

// lengthKeys are optional identity keys; the runner records the configured
// prompt lengths with `--metadata input_len=… output_len=…`.
var lengthKeys = []string{"input_len", "output_len", "random_input_len", "random_output_len"}

// MedianOf merges an odd number of repetitions of one benchmark into a
// single result. Every numeric top-level key present in all runs takes the
// median of its values; spec_decode_per_position_acceptance_rates takes the
// median element by element. Strings, booleans and nulls come from the first
// run. Other arrays and objects are per-request or per-run data that has no
// median and is dropped, as are numeric keys missing from some run.
//
// The runs must agree on backend, model_id, num_prompts, request_rate,
// max_concurrency and, where present, the prompt lengths.
func MedianOf(runs []BenchResult) (BenchResult, error) {
	if len(runs) == 0 {
		return BenchResult{}, errors.New("median of bench results: no runs")
	}
	if len(runs)%2 == 0 {
		return BenchResult{}, fmt.Errorf("median of bench results: %w, got %d", ErrEvenRepetitions, len(runs))
	}
	if err := checkIdentity(runs); err != nil {
		return BenchResult{}, fmt.Errorf("median of bench results: %w", err)
	}
	first := runs[0]
	var buf bytes.Buffer
	buf.WriteByte('{')
	n := 0
	for _, k := range layout(first.Order, first.Raw) {
		raw, err := medianMember(runs, k)
		if err != nil {
			return BenchResult{}, fmt.Errorf("median of bench results: %w", err)
		}
		if raw == nil {
			continue
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		key, _ := json.Marshal(k)
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(raw)
	}
	buf.WriteByte('}')
	merged, err := decodeBench(buf.Bytes())
	if err != nil {
		return BenchResult{}, fmt.Errorf("median of bench results: merged result: %w", err)
	}
	return merged, nil
}

// medianMember returns the merged value of key, or nil to drop it.
func medianMember(runs []BenchResult, key string) (json.RawMessage, error) {
	first := runs[0].Raw[key]
	if key == keySpecPerPosition {
		return medianPerPosition(runs)
	}
	if _, ok := number(first); ok {
		values := make([]float64, len(runs))
		for i, r := range runs {
			v, ok := number(r.Raw[key])
			if !ok {
				return nil, nil
			}
			values[i] = v
		}
		// An odd count makes the median one of the runs' own values, so
		// that run's literal is kept as written (an int stays an int).
		return runs[medianIndex(values)].Raw[key], nil
	}
	switch kind(first) {
	case "an array", "an object":
		return nil, nil
	}
	return first, nil
}

func medianPerPosition(runs []BenchResult) (json.RawMessage, error) {
	width := -1
	for i, r := range runs {
		rates := r.SpecDecodePerPositionAcceptanceRates
		if rates == nil {
			return nil, nil
		}
		if width >= 0 && len(rates) != width {
			return nil, fmt.Errorf("run %d: %s has %d positions, run 1 has %d",
				i+1, keySpecPerPosition, len(rates), width)
		}
		width = len(rates)
	}
	out := make([]float64, width)
	column := make([]float64, len(runs))
	for pos := range out {
		for i, r := range runs {
			column[i] = r.SpecDecodePerPositionAcceptanceRates[pos]
		}
		out[pos] = column[medianIndex(column)]
	}
	return json.Marshal(out)
}

// medianIndex returns the index of the median of an odd number of values.
func medianIndex(values []float64) int {
	idx := make([]int, len(values))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case values[a] < values[b]:
			return -1
		case values[a] > values[b]:
			return 1
		}
		return 0
	})
	return idx[len(idx)/2]
}

// checkIdentity reports every field on which a run differs from the first.
func checkIdentity(runs []BenchResult) error {
	type field struct {
		key   string
		value func(BenchResult) string
	}
	fields := []field{
		{keyBackend, func(b BenchResult) string { return fmt.Sprintf("%q", b.Backend) }},
		{keyModelID, func(b BenchResult) string { return fmt.Sprintf("%q", b.ModelID) }},
		{keyNumPrompts, func(b BenchResult) string { return fmt.Sprint(b.NumPrompts) }},
		{keyRequestRate, func(b BenchResult) string { return formatRate(b.RequestRate) }},
		{keyMaxConcurrency, func(b BenchResult) string {
			if b.MaxConcurrency == nil {
				return "null"
			}
			return fmt.Sprint(*b.MaxConcurrency)
		}},
	}
	for _, k := range lengthKeys {
		fields = append(fields, field{k, func(b BenchResult) string {
			raw, ok := b.Raw[k]
			if !ok {
				return "absent"
			}
			var compact bytes.Buffer
			if json.Compact(&compact, raw) != nil {
				return string(raw)
			}
			return compact.String()
		}})
	}
	var errs []error
	for _, f := range fields {
		want := f.value(runs[0])
		for i, r := range runs[1:] {
			if got := f.value(r); got != want {
				errs = append(errs, fmt.Errorf("%w: run %d has %s %s, run 1 has %s",
					ErrIdentityMismatch, i+2, f.key, got, want))
			}
		}
	}
	return errors.Join(errs...)
}

func formatRate(v float64) string {
	if math.IsInf(v, 1) {
		return `"inf"`
	}
	return fmt.Sprint(v)
}
