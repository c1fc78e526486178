package baseline_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/google/go-cmp/cmp"
)

// The compact file holds what the paired test reads of the samples: the
// same comparison either way.
func TestOutcomesFileRoundTrip(t *testing.T) {
	t.Parallel()
	samples, err := paired.ReadFile("../paired/testdata/spec-flips/samples_gsm8k_2026-08-21T02-00-00.000001.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	base, err := paired.ReadFile("../paired/testdata/nospec/samples_gsm8k_2026-08-21T01-00-00.000001.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), baseline.OutcomesFile)
	if err := baseline.WriteOutcomesFile(path, baseline.OutcomesOf("gsm8k", samples)); err != nil {
		t.Fatal(err)
	}
	o, err := baseline.ReadOutcomesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	right, err := baseline.OutcomesOf("gsm8k", base).Right("exact_match,strict-match")
	if err != nil {
		t.Fatal(err)
	}
	opts := paired.Options{Metric: "exact_match", Filter: "strict-match", Alpha: 0.01, MinPairs: 50}
	fromSamples, err := paired.CompareOutcomes(paired.Outcomes{Source: "n", Right: right}, samples, opts)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := paired.CompareOutcomes(paired.Outcomes{Source: "n", Right: right}, o.Samples(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(fromSamples, fromFile); diff != "" {
		t.Errorf("comparison from the compact file differs (-samples +file):\n%s", diff)
	}
}

func TestParseOutcomesRejects(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ text, want string }{
		{`{"task":"gsm8k"}`, "no documents"},
		{`{"task":"gsm8k","doc_hashes":["a","a"],"scores":{}}`, "repeated"},
		{`{"task":"gsm8k","doc_hashes":["a"],"scores":{"m":"2"}}`, "other than 0, 1 and -"},
		{`{"task":"gsm8k","doc_hashes":["a"],"doc_ids":[1,2]}`, "2 doc ids for 1 documents"},
		{`{"task":"gsm8k","doc_hashes":["a"],"extra":1}`, "unknown field"},
		{`{"task":`, "unexpected EOF"},
	} {
		_, err := baseline.ParseOutcomes(strings.NewReader(tt.text), "x.json")
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "x.json") {
			t.Errorf("ParseOutcomes(%s) = %v, want an error naming x.json with %q", tt.text, err, tt.want)
		}
	}
}
