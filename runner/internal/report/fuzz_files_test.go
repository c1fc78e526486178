package report

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// FuzzReportFiles runs the report step over a build's files as hostile
// jobs could leave them: two summaries whose gate pairs them, both
// recipes' per-question outcomes and samples files, and a selected list.
// Whatever the bytes, the step ends (no panic, no hang), writes no raw
// HTML, keeps its tables whole and stays under 1 MiB.
func FuzzReportFiles(f *testing.F) {
	tol, v, base := 0.015, 0.9, 0.92
	spec := summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: "spec-mi355x", Verdict: summary.VerdictPass,
		Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK, Metrics: map[string]float64{"exact_match,strict-match": v}}},
		Gates: []summary.GateResult{{Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: "exact_match,strict-match", Value: &v,
			BaselineFrom: "nospec-mi355x", Tolerance: &tol, Verdict: summary.VerdictPass}}}
	nospec := summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: "nospec-mi355x", Verdict: summary.VerdictPass,
		Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK, Metrics: map[string]float64{"exact_match,strict-match": base}}}}
	enc := func(s summary.Summary) []byte {
		var b bytes.Buffer
		if err := summary.Encode(&b, s); err != nil {
			f.Fatal(err)
		}
		return b.Bytes()
	}
	outcomes := []byte(`{"task":"gsm8k","doc_hashes":["a","b","c"],"scores":{"exact_match,strict-match":"110"}}`)
	samples := []byte(`{"doc_id":0,"doc_hash":"a","filter":"strict-match","metrics":["exact_match"],"exact_match":1}` + "\n")
	f.Add(enc(spec), enc(nospec), outcomes, outcomes, samples, samples, "spec-mi355x\nnospec-mi355x\nlost-b200")
	f.Add(enc(spec), enc(nospec), []byte(`{"task":"gsm8k","doc_hashes":["<b>x</b>"],"scores":{"exact_match,strict-match":"1"}}`), []byte(`{`), []byte("not json\n"), []byte{}, "<script>\n+99")
	f.Add([]byte(`{"schema_version":1,"recipe":"<img src=x onerror=alert(1)>","verdict":"fail","gates":[{"kind":"accuracy","subject":"gsm8k","metric":"m","verdict":"fail","baseline_from":"<b>","tolerance":-1e308,"value":1e308}]}`),
		[]byte(`{"schema_version":1,"recipe":"<b>","accuracy":[{"task":"gsm8k","status":"ok","metrics":{"m":NaN}}]}`),
		[]byte(`{"task":"gsm8k","doc_hashes":["a"],"scores":{"m":"1"}}`), outcomes, samples, []byte("\u202e\n"), "\u202e<x>\n+1")
	f.Fuzz(func(t *testing.T, specJSON, nospecJSON, specOutcomes, nospecOutcomes, specSamples, nospecSamples []byte, selected string) {
		dir := t.TempDir()
		write := func(rel string, data []byte) { testutil.WriteFile(t, filepath.Join(dir, rel), string(data)) }
		write("spec-mi355x/summary.json", specJSON)
		write("nospec-mi355x/summary.json", nospecJSON)
		write("spec-mi355x/gsm8k/"+baseline.OutcomesFile, specOutcomes)
		write("nospec-mi355x/gsm8k/"+baseline.OutcomesFile, nospecOutcomes)
		write("spec-mi355x/gsm8k/m/samples_gsm8k_2026-01-01T00-00-00.jsonl", specSamples)
		write("nospec-mi355x/gsm8k/m/samples_gsm8k_2026-01-01T00-00-00.jsonl", nospecSamples)
		env := map[string]string{contract.SelectedEnv: selected, "BUILDKITE_BUILD_URL": "https://buildkite.com/o/p/builds/1"}
		states := func(context.Context) (map[string]JobState, error) {
			return map[string]JobState{"recipe:lost-b200": {State: "<b>expired</b>"}}, nil
		}
		var out, errs bytes.Buffer
		err := runReport(context.Background(), Config{Results: dir, states: states}, cliutil.Streams{Stdout: &out, Stderr: &errs}, mapGetenv(env), nil)
		if err != nil && cliutil.ExitCode(err, "report", &errs) != 1 {
			t.Fatalf("report: %v\n%s", err, errs.String())
		}
		body := out.String()
		testutil.CheckMarkdownTables(t, body)
		checkNoRawHTML(t, body)
		if len(body) >= 1<<20+200 {
			t.Errorf("report is %d bytes, want under 1 MiB", len(body))
		}
	})
}
