package steptest

import (
	"bytes"
	"encoding/json"
	"testing"

	pipeline "github.com/buildkite/go-pipeline"
	"github.com/google/go-cmp/cmp"
)

// AssertGoPipelineParses fails the test unless go-pipeline, the parser the
// agent uses, reads pipelineJSON without error or warning, and its model of
// the pipeline, written back as JSON, means the same as pipelineJSON (see
// Normalize). It needs no agent binary, so it runs everywhere.
func AssertGoPipelineParses(t testing.TB, pipelineJSON []byte) {
	t.Helper()
	p, err := pipeline.Parse(bytes.NewReader(pipelineJSON))
	if err != nil {
		// Warnings come through err too; any is a failure.
		t.Fatalf("pipeline.Parse(pipelineJSON) error = %v\npipeline:\n%s", err, pipelineJSON)
	}
	back, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("json.Marshal(parsed pipeline) error = %v", err)
	}
	if diff := cmp.Diff(Normalize(decode(t, back)), Normalize(decode(t, pipelineJSON))); diff != "" {
		t.Errorf("go-pipeline reads the pipeline differently; diff (-go-pipeline +ours):\n%s", diff)
	}
}
