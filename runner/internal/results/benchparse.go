package results

import (
	"errors"
	"fmt"
	"io"
)

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
