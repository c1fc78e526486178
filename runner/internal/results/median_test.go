package results_test

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/runner/internal/results"
)

func medianRuns(t *testing.T) []results.BenchResult {
	t.Helper()
	var runs []results.BenchResult
	for i := 1; i <= 3; i++ {
		path := filepath.Join("testdata", "median", fmt.Sprintf("run%d.json", i))
		b, err := results.ParseBenchFile(path)
		if err != nil {
			t.Fatalf("ParseBenchFile(%q) error = %v", path, err)
		}
		runs = append(runs, b)
	}
	return runs
}

func TestMedianOf(t *testing.T) {
	t.Parallel()
	got, err := results.MedianOf(medianRuns(t))
	if err != nil {
		t.Fatalf("MedianOf() error = %v", err)
	}
	// Each run holds the median of some keys, so picking one run fails.
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"date of first run", got.Date, "20260821-143015"},
		{"duration", got.Duration, 41.5},
		{"output throughput", got.OutputThroughput, 616.5},
		{"mean ttft", got.TTFT.Mean, 118.42},
		{"request rate", math.IsInf(got.RequestRate, 1), true},
		{"completed", got.Completed, 200},
		{"drafts", got.Numeric["spec_decode_num_drafts"], 10240.0},
		{"acceptance rate", *got.SpecDecodeAcceptanceRate, 50.0},
		{"per position", got.SpecDecodePerPositionAcceptanceRates, []float64{0.72, 0.49, 0.29}},
		{"per-request arrays dropped", got.Raw["latencies"] == nil, true},
		{"key of one run dropped", got.Raw["probe_completed"] == nil, true},
		{"metadata kept", string(got.Raw["input_len"]), `"8192"`},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.got, c.want); diff != "" {
			t.Errorf("MedianOf() %s diff (-got +want):\n%s", c.name, diff)
		}
	}
	out, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("json.Marshal(MedianOf()) error = %v", err)
	}
	checkGolden(t, "median.golden.json", append(out, '\n'))
}

func TestMedianOfPerPositionIsElementWise(t *testing.T) {
	t.Parallel()
	var runs []results.BenchResult
	for _, rates := range []string{"[0.9, 0.1]", "[0.5, 0.3]", "[0.7, 0.2]"} {
		b, err := results.ParseBench(strings.NewReader(minimal("1", `, "spec_decode_per_position_acceptance_rates": `+rates)))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, b)
	}
	got, err := results.MedianOf(runs)
	if err != nil {
		t.Fatalf("MedianOf() error = %v", err)
	}
	if diff := cmp.Diff(got.SpecDecodePerPositionAcceptanceRates, []float64{0.7, 0.2}); diff != "" {
		t.Errorf("MedianOf() per position diff (-got +want):\n%s", diff)
	}
}

func TestMedianOfSingleRun(t *testing.T) {
	t.Parallel()
	run := medianRuns(t)[0]
	got, err := results.MedianOf([]results.BenchResult{run})
	if err != nil {
		t.Fatalf("MedianOf() error = %v", err)
	}
	if diff := cmp.Diff(got, run, ignoreRaw); diff != "" {
		t.Errorf("MedianOf(one run) diff (-got +want):\n%s", diff)
	}
}

func TestMedianOfErrors(t *testing.T) {
	t.Parallel()
	parse := func(input string) results.BenchResult {
		b, err := results.ParseBench(strings.NewReader(input))
		if err != nil {
			t.Fatalf("ParseBench() error = %v", err)
		}
		return b
	}
	base := minimal("1", `, "input_len": "8192"`)
	tests := []struct {
		name    string
		runs    []results.BenchResult
		wantIs  error
		wantMsg string
	}{
		{"no runs", nil, nil, "no runs"},
		{"even count", []results.BenchResult{parse(base), parse(base)}, results.ErrEvenRepetitions, "got 2"},
		{"model differs", []results.BenchResult{parse(base), parse(base), parse(strings.Replace(base, `"m"`, `"other"`, 1))},
			results.ErrIdentityMismatch, `run 3 has model_id "other", run 1 has "m"`},
		{"concurrency differs", []results.BenchResult{parse(base), parse(strings.Replace(base, `"max_concurrency": 1`, `"max_concurrency": null`, 1)), parse(base)},
			results.ErrIdentityMismatch, "run 2 has max_concurrency null, run 1 has 1"},
		{"rate differs", []results.BenchResult{parse(base), parse(base), parse(minimal(`"inf"`, `, "input_len": "8192"`))},
			results.ErrIdentityMismatch, `run 3 has request_rate "inf", run 1 has 1`},
		{"input length differs", []results.BenchResult{parse(base), parse(minimal("1", `, "input_len": "1024"`)), parse(base)},
			results.ErrIdentityMismatch, `run 2 has input_len "1024", run 1 has "8192"`},
		{"input length missing", []results.BenchResult{parse(base), parse(minimal("1", "")), parse(base)},
			results.ErrIdentityMismatch, `run 2 has input_len absent`},
		{"per-position widths differ", []results.BenchResult{
			parse(minimal("1", `, "spec_decode_per_position_acceptance_rates": [0.5]`)),
			parse(minimal("1", `, "spec_decode_per_position_acceptance_rates": [0.5, 0.2]`)),
			parse(minimal("1", `, "spec_decode_per_position_acceptance_rates": [0.5]`)),
		}, nil, "run 2: spec_decode_per_position_acceptance_rates has 2 positions, run 1 has 1"},
		{"core key not numeric in every run", []results.BenchResult{
			parse(base), parse(base), {Backend: "openai", ModelID: "m", NumPrompts: 2, RequestRate: 1, MaxConcurrency: ptr(1),
				Raw: map[string]json.RawMessage{"input_len": []byte(`"8192"`)}},
		}, results.ErrMissingKey, "merged result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := results.MedianOf(tt.runs)
			checkError(t, "MedianOf()", err, tt.wantIs, tt.wantMsg)
		})
	}
}
