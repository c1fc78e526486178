package results

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

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
