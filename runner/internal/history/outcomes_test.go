package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

// samplesFile is an lm_eval samples file of gsm8k with two filters; doc i
// is right under strict-match when right(i), always under flexible-extract.
func samplesFile(docs int, right func(int) bool) []byte {
	var b strings.Builder
	for i := range docs {
		for _, filter := range []string{"strict-match", "flexible-extract"} {
			v := "1.0"
			if filter == "strict-match" && !right(i) {
				v = "0.0"
			}
			fmt.Fprintf(&b, `{"doc_id": %d, "doc": {"question": "A LONG PROMPT %d"}, "target": "7", "arguments": {"gen_args_0": {"arg_0": "Q", "arg_1": {}}}, "resps": [["7"]], "filtered_resps": ["7"], "filter": %q, "metrics": ["exact_match"], "doc_hash": "h%03d", "prompt_hash": "p", "target_hash": "t", "exact_match": %s}`+"\n", i, i, filter, i, v)
		}
	}
	return []byte(b.String())
}

func nightOf(t *testing.T, recipe, digest string) []byte {
	t.Helper()
	return baselinetest.Encode(t, summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: recipe, GPU: "MI355X", NumGPUs: 8, Model: "m", ImageDigest: digest, Verdict: summary.VerdictPass,
		Phases: []summary.Phase{}, Bench: []summary.BenchRun{}, Gates: []summary.GateResult{},
		Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK, Metrics: map[string]float64{"exact_match,strict-match": 0.5}}}})
}

// For a need with samples, the history step keeps the per-question
// outcomes of the newest night of each image digest, and records a night
// without samples as missing them; the history as a whole still succeeds.
func TestCommandKeepsOutcomes(t *testing.T) {
	t.Parallel()
	const twin = "nospec-mi355x"
	api := bkapitest.NewServer(t, "org", "pipe", token)
	digests := map[int]string{21: "sha256:aaa", 22: "sha256:bbb", 23: "sha256:bbb"}
	for b := 21; b <= 23; b++ {
		job := fmt.Sprintf("job-%d", b)
		api.AddBuild(bkapitest.Build{Number: b, FinishedAt: time.Date(2026, 2, b, 4, 0, 0, 0, time.UTC), Jobs: []bkapitest.Job{{ID: job, StepKey: contract.StepKey(twin)}}})
		api.AddArtifact(b, bkapitest.Artifact{JobID: job, Path: contract.SummaryPath(twin), Content: nightOf(t, twin, digests[b])})
	}
	// #23: two runs' samples, the newer wins; #22 has some but is not the
	// newest of its digest; #21 logged none.
	dir := contract.ResultsDir(twin) + "/gsm8k/org__m/"
	api.AddArtifact(23, bkapitest.Artifact{JobID: "job-23", Path: dir + "samples_gsm8k_2026-02-22T01-00-00.000001.jsonl", Content: samplesFile(3, func(int) bool { return false })})
	api.AddArtifact(23, bkapitest.Artifact{JobID: "job-23", Path: dir + "samples_gsm8k_2026-02-23T01-00-00.000001.jsonl", Content: samplesFile(5, func(i int) bool { return i%2 == 0 })})
	api.AddArtifact(23, bkapitest.Artifact{JobID: "job-23", Path: dir + "samples_gsm8k_cot_2026-02-24T01-00-00.000001.jsonl", Content: samplesFile(2, func(int) bool { return true })})
	api.AddArtifact(22, bkapitest.Artifact{JobID: "job-22", Path: dir + "samples_gsm8k_2026-02-22T01-00-00.000001.jsonl", Content: samplesFile(5, func(int) bool { return true })})

	out := t.TempDir()
	env := apiEnv(api, 24, contract.Need{Recipe: twin, Nights: 10, Samples: []string{"gsm8k"}})
	var stdout bytes.Buffer
	if err := runAgainstAPI(out, env, &stdout, &stdout); err != nil {
		t.Fatalf("Run() = %v\n%s", err, stdout.String())
	}
	r, err := baseline.FileSource(filepath.Join(out, "recipes", twin+".json")).Last(context.Background(), twin, contract.StepKey(twin), 10)
	if err != nil {
		t.Fatalf("FileSource.Last() = %v", err)
	}
	got := map[int][]baseline.Outcomes{}
	for _, n := range r.Nights {
		got[n.BuildNumber] = n.Outcomes
	}
	want := map[int][]baseline.Outcomes{
		23: {{Task: "gsm8k", BuildNumber: 23, ImageDigest: "sha256:bbb", Artifact: dir + "samples_gsm8k_2026-02-23T01-00-00.000001.jsonl",
			DocHashes: []string{"h000", "h001", "h002", "h003", "h004"}, DocIDs: []int{0, 1, 2, 3, 4},
			Scores: map[string]string{"exact_match,strict-match": "10101", "exact_match,flexible-extract": "11111"}}},
		22: nil,
		21: {{Task: "gsm8k", BuildNumber: 21, ImageDigest: "sha256:aaa",
			Missing: "no results/nospec-mi355x/gsm8k/outcomes.json or samples artifact results/nospec-mi355x/gsm8k/samples_gsm8k_<date>.jsonl (was lm_eval run with --log_samples?)"}},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("outcomes diff (-got +want):\n%s", diff)
	}
	raw, err := os.ReadFile(filepath.Join(out, "baselines.json"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("A LONG PROMPT")) {
		t.Errorf("the history file holds the samples' prompts; it should hold outcomes only")
	}
	if !strings.Contains(stdout.String(), "nospec-mi355x #21 gsm8k: no per-question outcomes") {
		t.Errorf("the log does not say #21 has no outcomes:\n%s", stdout.String())
	}
}

// The compact outcomes file a job wrote is kept over its samples; samples
// of realistic size (tens of megabytes, over the in-memory download cap)
// are still read whole; an unreadable outcomes file is recorded as one
// that could not be read, which leaves the gate unverified.
func TestCommandOutcomesAtRealisticSizes(t *testing.T) {
	t.Parallel()
	const twin = "nospec-mi355x"
	api := bkapitest.NewServer(t, "org", "pipe", token)
	digests := map[int]string{31: "sha256:a31", 32: "sha256:a32", 33: "sha256:a33"}
	for b := 31; b <= 33; b++ {
		job := fmt.Sprintf("job-%d", b)
		api.AddBuild(bkapitest.Build{Number: b, FinishedAt: time.Date(2026, 3, b-30, 4, 0, 0, 0, time.UTC), Jobs: []bkapitest.Job{{ID: job, StepKey: contract.StepKey(twin)}}})
		api.AddArtifact(b, bkapitest.Artifact{JobID: job, Path: contract.SummaryPath(twin), Content: nightOf(t, twin, digests[b])})
	}
	dir := contract.ResultsDir(twin) + "/gsm8k/"
	// #33: a compact file beside samples that say otherwise: the file wins.
	compact := baseline.OutcomesOf("gsm8k", mustParse(t, samplesFile(4, func(i int) bool { return i < 2 })))
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(compact); err != nil {
		t.Fatal(err)
	}
	api.AddArtifact(33, bkapitest.Artifact{JobID: "job-33", Path: dir + baseline.OutcomesFile, Content: buf.Bytes()})
	api.AddArtifact(33, bkapitest.Artifact{JobID: "job-33", Path: dir + "m/samples_gsm8k_2026-03-03T01-00-00.000001.jsonl", Content: samplesFile(4, func(int) bool { return false })})
	// #32: only samples, 12 MB of them (5-shot prompts): kept per question.
	big := bigSamples(12 << 20)
	api.AddArtifact(32, bkapitest.Artifact{JobID: "job-32", Path: dir + "m/samples_gsm8k_2026-03-02T01-00-00.000001.jsonl", Content: big})
	// #31: a damaged outcomes file.
	api.AddArtifact(31, bkapitest.Artifact{JobID: "job-31", Path: dir + baseline.OutcomesFile, Content: []byte(`{"task":"gsm8k","doc_hashes":["a"],"scores":{"m":"11"}}`)})

	out := t.TempDir()
	env := apiEnv(api, 34, contract.Need{Recipe: twin, Nights: 10, Samples: []string{"gsm8k"}})
	var stdout bytes.Buffer
	if err := runAgainstAPI(out, env, &stdout, &stdout); err != nil {
		t.Fatalf("Run() = %v\n%s", err, stdout.String())
	}
	r, err := baseline.FileSource(filepath.Join(out, "baselines.json")).Last(context.Background(), twin, contract.StepKey(twin), 10)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]baseline.Outcomes{}
	for _, n := range r.Nights {
		if len(n.Outcomes) == 1 {
			got[n.BuildNumber] = n.Outcomes[0]
		}
	}
	if o := got[33]; o.Artifact != dir+baseline.OutcomesFile || o.Scores["exact_match,strict-match"] != "1100" {
		t.Errorf("#33 outcomes = %+v, want the compact file's", o)
	}
	if o := got[32]; o.Missing != "" || len(o.DocHashes) != bytes.Count(big, []byte("\n"))/2 {
		t.Errorf("#32 outcomes from %d bytes of samples: %d documents, missing %q; want them all", len(big), len(o.DocHashes), o.Missing)
	}
	if o := got[31]; !strings.HasPrefix(o.Missing, "could not read") {
		t.Errorf("#31 outcomes = %+v, want could not read", o)
	}
}

func mustParse(t *testing.T, data []byte) []paired.Sample {
	t.Helper()
	s, err := paired.Parse(bytes.NewReader(data), "samples")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// bigSamples is a samples file of about size bytes: long few-shot prompts.
func bigSamples(size int) []byte {
	prompt := strings.Repeat("Question: what is 2 + 2? Answer: 4. ", 200)
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		for _, filter := range []string{"strict-match", "flexible-extract"} {
			fmt.Fprintf(&b, `{"doc_id": %d, "doc": {"question": %q}, "filter": %q, "metrics": ["exact_match"], "doc_hash": "h%06d", "exact_match": %d}`+"\n", i, prompt, filter, i, i%2)
		}
	}
	return []byte(b.String())
}
