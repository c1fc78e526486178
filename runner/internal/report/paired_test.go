package report

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/benchkite/benchkite/workloads/workloadstest"
	"github.com/google/go-cmp/cmp"
)

// The stand-in samples of the paired package: the no-spec run scores 0.75
// on 100 gsm8k questions under both filters; the speculative runs answer
// identically, flip a few answers both ways, or lose twelve.
const pairedData = "../paired/testdata"

// seedBuild writes a build's results as the seed recipe and its no-spec
// twin leave them: each summary.json, and the samples file of gsm8k under
// lm_eval's model folder. It returns the results directory.
func seedBuild(t *testing.T, spec string, specScore, nospecScore float64) string {
	t.Helper()
	seed := workloadstest.Resolve(t, "../../../testdata/workloads/minimax_m3_mi355x.yaml", nil)
	twin := workloadstest.Resolve(t, "../../../testdata/workloads/minimax_m3_nospec_mi355x.yaml", nil)
	task := seed.Tasks[0]
	e := task.Expect[0]
	if e.BaselineFrom != twin.Recipe.Name || twin.Recipe.VLLM.Model != seed.Recipe.VLLM.Model {
		t.Fatalf("seed gate %+v does not name its no-spec twin %s of the same model", e, twin.Recipe.Name)
	}
	dir := t.TempDir()
	model := strings.ReplaceAll(seed.Recipe.VLLM.Model, "/", "__")
	write := func(r *workloads.Resolved, score float64, samples string, gates []summary.GateResult) {
		s := summary.Summary{Recipe: r.Recipe.Name, Model: r.Recipe.VLLM.Model, Verdict: summary.VerdictPass,
			Accuracy: []summary.TaskResult{{Task: task.Name, Status: summary.StatusOK, Metrics: map[string]float64{e.Metric: score}}},
			Gates:    gates}
		if err := os.MkdirAll(filepath.Join(dir, r.Recipe.Name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := summary.Write(filepath.Join(dir, r.Recipe.Name, "summary.json"), s); err != nil {
			t.Fatal(err)
		}
		src, err := os.ReadFile(samples)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dir, r.Recipe.Name, task.Name, model, filepath.Base(samples))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tol, last := e.Tolerance, nospecScore
	write(seed, specScore, filepath.Join(pairedData, spec, "samples_gsm8k_2026-08-21T02-00-00.000001.jsonl"),
		[]summary.GateResult{{Kind: summary.GateAccuracy, Subject: task.Name, Metric: e.Metric, Value: &specScore, Baseline: &last,
			Verdict: summary.VerdictPass, BaselineFrom: e.BaselineFrom, Tolerance: &tol}})
	write(twin, nospecScore, filepath.Join(pairedData, "nospec", "samples_gsm8k_2026-08-21T01-00-00.000001.jsonl"), []summary.GateResult{})
	return dir
}

func TestReportPairsSeedWithTwin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		spec              string
		specScore, nospec float64
		removeSamples     bool
		compact           bool // the jobs' outcomes files instead of their samples
		wantExit          int
		wantRow, wantWhy  string
	}{
		// The files hold 100 questions, fewer than the 200 the test decides
		// on: unverified, with the count, whatever they show.
		{name: "identical answers", spec: "spec-identical", specScore: 0.75, nospec: 0.75,
			wantRow: "| ⚠️ unverified | `minimax_m3-mi355x` | gsm8k | `exact_match,flexible-extract` | 0.7500 | `minimax_m3-nospec-mi355x` | 0.7500 | +0.0000 | 0.015 | 100 pairs, 100.0% agree, b 0, c 0, p = 1 |",
			wantWhy: "unverified: only 100 paired documents, 200 needed to decide per question"},
		{name: "a few flips both ways", spec: "spec-flips", specScore: 0.72, nospec: 0.75,
			wantRow: "| ⚠️ unverified | `minimax_m3-mi355x` | gsm8k | `exact_match,flexible-extract` | 0.7200 | `minimax_m3-nospec-mi355x` | 0.7500 | -0.0300 | 0.015 | 98 pairs, 94.9% agree, b 3, c 2, p = 0.5 |",
			wantWhy: "2 documents only without speculation and 1 only with it were left out"},
		{name: "a real drop", spec: "spec-drop", specScore: 0.64, nospec: 0.75,
			wantRow: "| ⚠️ unverified | `minimax_m3-mi355x` | gsm8k | `exact_match,flexible-extract` | 0.6400 | `minimax_m3-nospec-mi355x` | 0.7500 | -0.1100 | 0.015 | 100 pairs, 87.0% agree, b 12, c 1, p = 0.0017 |",
			wantWhy: "unverified: only 100 paired documents, 200 needed"},
		{name: "a real drop, from the compact outcomes files", spec: "spec-drop", specScore: 0.64, nospec: 0.75, compact: true,
			wantRow: "| ⚠️ unverified | `minimax_m3-mi355x` | gsm8k | `exact_match,flexible-extract` | 0.6400 | `minimax_m3-nospec-mi355x` | 0.7500 | -0.1100 | 0.015 | 100 pairs, 87.0% agree, b 12, c 1, p = 0.0017 |",
			wantWhy: "unverified: only 100 paired documents, 200 needed"},
		// Without the twin's samples the means decide: 0.72 is more than
		// 0.015 below 0.75.
		{name: "no samples: the means decide", spec: "spec-flips", specScore: 0.72, nospec: 0.75, removeSamples: true, wantExit: 1,
			wantRow: "| ❌ fail | `minimax_m3-mi355x` | gsm8k | `exact_match,flexible-extract` | 0.7200 | `minimax_m3-nospec-mi355x` | 0.7500 | -0.0300 | 0.015 | – (means) |",
			wantWhy: "not compared per question (bad lm_eval samples: no samples_gsm8k_&lt;date&gt;.jsonl in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := seedBuild(t, tt.spec, tt.specScore, tt.nospec)
			if tt.removeSamples {
				if err := os.RemoveAll(filepath.Join(dir, "minimax_m3-nospec-mi355x", "gsm8k")); err != nil {
					t.Fatal(err)
				}
			}
			if tt.compact {
				for _, r := range []string{"minimax_m3-mi355x", "minimax_m3-nospec-mi355x"} {
					files, _ := filepath.Glob(filepath.Join(dir, r, "gsm8k", "*", "samples_gsm8k_*.jsonl"))
					if len(files) != 1 {
						t.Fatalf("samples of %s: %q", r, files)
					}
					samples, err := paired.ReadFile(files[0])
					if err != nil {
						t.Fatal(err)
					}
					if err := baseline.WriteOutcomesFile(filepath.Join(dir, r, "gsm8k", baseline.OutcomesFile), baseline.OutcomesOf("gsm8k", samples)); err != nil {
						t.Fatal(err)
					}
					if err := os.Remove(files[0]); err != nil {
						t.Fatal(err)
					}
				}
			}
			var out bytes.Buffer
			err := runReport(context.Background(), Config{Results: dir}, cliutil.Streams{Stdout: &out, Stderr: &out},
				func(string) string { return "" }, nil)
			code := 0
			var ee *cliutil.ExitError
			if errors.As(err, &ee) {
				code = ee.Code
			} else if err != nil {
				t.Fatalf("Run() error = %v", err)
			}
			if code != tt.wantExit {
				t.Errorf("Run() exit = %d, want %d\n%s", code, tt.wantExit, out.String())
			}
			body := out.String()
			testutil.CheckMarkdownTables(t, body)
			for _, want := range []string{tt.wantRow, tt.wantWhy} {
				if !strings.Contains(body, want) {
					t.Errorf("report lacks %q:\n%s", want, body)
				}
			}
		})
	}
}

func TestSamplePatterns(t *testing.T) {
	t.Parallel()
	got := samplePatterns(seedPair(0.91, 0.92), "results")
	// Each from its recipe's own step.
	want := [][2]string{{"results/minimax_m3-mi355x/gsm8k/outcomes.json", "recipe:minimax_m3-mi355x"}, {"results/minimax_m3-nospec-mi355x/gsm8k/outcomes.json", "recipe:minimax_m3-nospec-mi355x"}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("samplePatterns() diff (-got +want):\n%s", diff)
	}
	if got := samplePatterns(seedPair(0.91, 0.92)[:1], "results"); got != nil {
		t.Errorf("samplePatterns(twin absent) = %q, want none", got)
	}
}
