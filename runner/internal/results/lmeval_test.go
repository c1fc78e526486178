package results_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/results"
)

func TestParseLMEvalFiles(t *testing.T) {
	t.Parallel()
	examples := examplesDir(t)
	tests := []struct {
		name string
		path string
		want results.LMEvalResult
	}{
		{
			name: "v0.4.12 reference example",
			path: filepath.Join(examples, "lm_eval_results_example.json"),
			want: results.LMEvalResult{
				Tasks: map[string]results.LMEvalTask{
					"gsm8k": {
						Name: "gsm8k", Alias: "gsm8k", SampleLen: 1319,
						Metrics: map[string]float64{
							"exact_match,strict-match":     0.7649734647460197,
							"exact_match,flexible-extract": 0.7725549658832449,
						},
						Stderr: map[string]float64{
							"exact_match,strict-match":     0.011679491349994886,
							"exact_match,flexible-extract": 0.0115463633125482,
						},
					},
				},
				NShot:          map[string]int{"gsm8k": 5},
				NSamples:       map[string]results.LMEvalSampleCount{"gsm8k": {Original: 1319, Effective: 1319}},
				Versions:       map[string]string{"gsm8k": "3.0"},
				HigherIsBetter: map[string]map[string]bool{"gsm8k": {"exact_match": true}},
				LMEvalVersion:  "0.4.12",
				Model:          "local-completions",
				ModelArgs: map[string]string{
					"model":              "meta-llama/Llama-3.1-8B-Instruct",
					"base_url":           "http://127.0.0.1:8000/v1/completions",
					"num_concurrent":     "32",
					"max_retries":        "3",
					"tokenized_requests": "false",
				},
			},
		},
		{
			name: "v0.4.9 layout",
			path: filepath.Join("testdata", "lm_eval_v0.4.9.json"),
			want: results.LMEvalResult{
				Tasks: map[string]results.LMEvalTask{
					"gsm8k": {
						Alias: "gsm8k",
						Metrics: map[string]float64{
							"exact_match,strict-match":     0.9310083396512509,
							"exact_match,flexible-extract": 0.9355572403335861,
						},
						Stderr: map[string]float64{
							"exact_match,strict-match":     0.006979311993957416,
							"exact_match,flexible-extract": 0.0067650399016245,
						},
					},
					"arc_easy": {
						Alias:   "arc_easy",
						Metrics: map[string]float64{"acc,none": 0.8135521885521886, "acc_norm,none": 0.7962962962962963},
						Stderr:  map[string]float64{},
					},
				},
				NShot: map[string]int{"arc_easy": 0, "gsm8k": 5},
				NSamples: map[string]results.LMEvalSampleCount{
					"gsm8k": {Original: 1319, Effective: 1319}, "arc_easy": {Original: 2376, Effective: 2376},
				},
				Versions: map[string]string{"arc_easy": "1.0", "gsm8k": "3.0"},
				HigherIsBetter: map[string]map[string]bool{
					"arc_easy": {"acc": true, "acc_norm": true}, "gsm8k": {"exact_match": true},
				},
				LMEvalVersion: "0.4.9.2",
				Model:         "local-completions",
				ModelArgs: map[string]string{
					"model":              "openai/gpt-oss-120b",
					"base_url":           "http://127.0.0.1:8000/v1/completions",
					"num_concurrent":     "64",
					"tokenized_requests": "False",
					"tokenizer_backend":  "None",
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := results.ParseLMEvalFile(tt.path)
			if err != nil {
				t.Fatalf("ParseLMEvalFile(%q) error = %v", tt.path, err)
			}
			if diff := cmp.Diff(got, tt.want, cmpopts.IgnoreFields(results.LMEvalResult{}, "Raw")); diff != "" {
				t.Errorf("ParseLMEvalFile(%q) diff (-got +want):\n%s", tt.path, diff)
			}
			if _, ok := got.Raw["config"]; !ok {
				t.Errorf("ParseLMEvalFile(%q).Raw lacks config", tt.path)
			}
		})
	}
}

func TestParseLMEvalGroups(t *testing.T) {
	t.Parallel()
	input := `{
  "results": {"mmlu": {"alias": "mmlu", "acc,none": 0.7}, "mmlu_anatomy": {"alias": " - anatomy", "acc,none": 0.6, "acc_stderr,none": 0.04}},
  "groups": {"mmlu": {"alias": "mmlu", "acc,none": 0.71}, "mmlu_stem": {"alias": "stem", "acc,none": 0.65, "acc_stderr": 0.01}}
}`
	got, err := results.ParseLMEval(strings.NewReader(input))
	if err != nil {
		t.Fatalf("ParseLMEval() error = %v", err)
	}
	want := map[string]results.LMEvalTask{
		"mmlu":         {Alias: "mmlu", Metrics: map[string]float64{"acc,none": 0.7}, Stderr: map[string]float64{}},
		"mmlu_anatomy": {Alias: " - anatomy", Metrics: map[string]float64{"acc,none": 0.6}, Stderr: map[string]float64{"acc,none": 0.04}},
		"mmlu_stem":    {Alias: "stem", Metrics: map[string]float64{"acc,none": 0.65}, Stderr: map[string]float64{"acc": 0.01}},
	}
	if diff := cmp.Diff(got.Tasks, want); diff != "" {
		t.Errorf("ParseLMEval() tasks diff (-got +want):\n%s", diff)
	}
}

func TestParseLMEvalErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		input   string
		wantIs  error
		wantMsg string
	}{
		{"not JSON", "results", nil, "invalid character"},
		{"not an object", `[]`, nil, "expected a JSON object"},
		{"no results", `{"config": {}}`, results.ErrMissingKey, `missing key "results"`},
		{"results of the wrong shape", `{"results": [1]}`, nil, `key "results": unexpected layout`},
		{"model_args a number", `{"results": {}, "config": {"model_args": 3}}`, nil, `key "config.model_args": want an object or a string, got a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := results.ParseLMEval(strings.NewReader(tt.input))
			checkError(t, "ParseLMEval()", err, tt.wantIs, tt.wantMsg)
		})
	}
}

func TestFindLMEvalResults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files []string
		want  string // "" means ErrNoLMEvalResults
	}{
		{
			name: "model folder, newest by timestamp",
			files: []string{
				"meta-llama__Llama-3.1-8B-Instruct/results_2026-08-21T14-30-15.123456.json",
				"meta-llama__Llama-3.1-8B-Instruct/results_2026-08-22T09-00-00.000001.json",
				"meta-llama__Llama-3.1-8B-Instruct/samples_gsm8k_2026-08-23T00-00-00.000000.jsonl",
			},
			want: "meta-llama__Llama-3.1-8B-Instruct/results_2026-08-22T09-00-00.000001.json",
		},
		{
			name: "timestamp without microseconds sorts first",
			files: []string{
				"m/results_2026-08-21T14-30-15.json",
				"m/results_2026-08-21T14-30-15.5.json",
			},
			want: "m/results_2026-08-21T14-30-15.5.json",
		},
		{
			name: "output path ending in .json",
			files: []string{
				"gsm8k_2026-08-21T14-30-15.123456.json",
				"gsm8k_2026-08-20T14-30-15.123456.json",
				"samples_gsm8k_2026-08-22T14-30-15.123456.json",
				"bench-8k.json",
			},
			want: "gsm8k_2026-08-21T14-30-15.123456.json",
		},
		{
			name: "both layouts compared by timestamp",
			files: []string{
				"zz_2026-08-20T00-00-00.json",
				"m/results_2026-08-21T00-00-00.json",
			},
			want: "m/results_2026-08-21T00-00-00.json",
		},
		{
			name:  "only samples and other files",
			files: []string{"m/samples_gsm8k_2026-08-21T14-30-15.jsonl", "notes.json", "deep/er/results_2026-08-21T00-00-00.json"},
			want:  "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, f := range tt.files {
				testutil.WriteFile(t, filepath.Join(dir, filepath.FromSlash(f)), "{}")
			}
			got, err := results.FindLMEvalResults(dir)
			if tt.want == "" {
				if !errors.Is(err, results.ErrNoLMEvalResults) || !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("FindLMEvalResults() = %q, %v; want ErrNoLMEvalResults", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("FindLMEvalResults() error = %v", err)
			}
			if diff := cmp.Diff(got, filepath.Join(dir, filepath.FromSlash(tt.want))); diff != "" {
				t.Errorf("FindLMEvalResults() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestFindLMEvalResultsMissingDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "absent")
	if _, err := results.FindLMEvalResults(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FindLMEvalResults(%q) error = %v, want os.ErrNotExist", dir, err)
	}
}
