package summary

import (
	"bytes"
	"encoding/json"
)

// benchIdentity is a BenchRun without its measurements: what a run that
// is not "ok" writes, so that no reader takes a zero for a measured value.
type benchIdentity struct {
	Name        string `json:"name"`
	Config      string `json:"config"`
	Concurrency int    `json:"concurrency"`
	NumPrompts  int    `json:"num_prompts"`
	InputLen    int    `json:"input_len,omitempty"`
	OutputLen   int    `json:"output_len,omitempty"`
	Repetitions int    `json:"repetitions"`
	Backend     string `json:"backend,omitempty"`
	// Temperature is the bench's sampling temperature (0: greedy), which
	// speculative decoding's acceptance depends on.
	Temperature *float64 `json:"temperature,omitempty"`
	Status      string   `json:"status"`
	Error       string   `json:"error,omitempty"`
	File        string   `json:"file,omitempty"`
}

// MarshalJSON writes the throughput, latency, spec_decode and metrics
// keys only for a run whose status is "ok": the numbers of a failed,
// skipped or canceled run were not measured.
func (b BenchRun) MarshalJSON() ([]byte, error) {
	if b.Status == StatusOK {
		type plain BenchRun // no methods: the default encoding
		return marshal(plain(b))
	}
	return marshal(benchIdentity{
		Name: b.Name, Config: b.Config, Concurrency: b.Concurrency, NumPrompts: b.NumPrompts,
		InputLen: b.InputLen, OutputLen: b.OutputLen, Repetitions: b.Repetitions, Backend: b.Backend,
		Temperature: b.Temperature, Status: b.Status, Error: b.Error, File: b.File,
	})
}

// marshal is json.Marshal without HTML escaping, as Encode writes.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
