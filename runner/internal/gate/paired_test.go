package gate

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

const strict = "exact_match,strict-match"

// pairedGater is the seed's gsm8k gate against a no-spec night whose
// per-question outcomes the history step kept (from nospecFile), with
// tonight's samples copied from specFile into a fresh results directory.
func pairedGater(t *testing.T, nospecFile, specFile, tonightDigest, nightDigest string, withOutcomes bool) (Gater, *summary.Summary) {
	t.Helper()
	base, err := paired.ReadFile(nospecFile)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := paired.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	score := func(ss []paired.Sample) float64 {
		n, right := 0, 0.0
		for _, s := range ss {
			if s.Filter == "strict-match" {
				n++
				right += s.Metrics["exact_match"]
			}
		}
		return right / float64(n)
	}
	night := baselinetest.Encode(t, summary.Summary{Recipe: "nospec-mi355x", Model: "m", ImageDigest: nightDigest, Verdict: summary.VerdictPass,
		Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK, Metrics: map[string]float64{strict: score(base)}}}})
	n := baseline.Night{BuildNumber: 41, Summary: night}
	if withOutcomes {
		o := baseline.OutcomesOf("gsm8k", base)
		o.BuildNumber, o.ImageDigest = 41, nightDigest
		n.Outcomes = []baseline.Outcomes{o}
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "gsm8k"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := baseline.WriteOutcomesFile(filepath.Join(dir, "gsm8k", baseline.OutcomesFile), baseline.OutcomesOf("gsm8k", spec)); err != nil {
		t.Fatal(err)
	}
	src := &baselinetest.Source{Nights: map[string][]baseline.Night{"nospec-mi355x": {n}}}
	res := accuracyRecipe(workloads.Expectation{Metric: strict, BaselineFrom: "nospec-mi355x", Tolerance: 0.02, Alpha: 0.01})
	sum := &summary.Summary{Recipe: "r-mi355x", Model: "m", ImageDigest: tonightDigest,
		Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK, Metrics: map[string]float64{strict: score(spec)}}}}
	return Gater{Res: res, History: src.History(), ResultsDir: dir}, sum
}

// TestPairedOnTheRecipesOwnStep: with the twin's outcomes in the history,
// the recipe's own gate decides per question: a few flips both ways pass
// however the means moved, a real drop fails.
func TestPairedOnTheRecipesOwnStep(t *testing.T) {
	t.Parallel()
	const nospec = "../paired/testdata/nospec/samples_gsm8k_2026-08-21T01-00-00.000001.jsonl"
	spec := func(kind string) string {
		return "../paired/testdata/spec-" + kind + "/samples_gsm8k_2026-08-21T02-00-00.000001.jsonl"
	}
	tests := []struct {
		name         string
		specFile     string
		tonight      string // image digests
		night        string
		withOutcomes bool
		verdict      string
		b, c         int
		wantPaired   bool
		wantMessage  []string
		minPairs     int    // 50 when zero: the files hold 100 documents
		tonightFile  string // replaces tonight's outcomes file
	}{
		{name: "too few questions: unverified with the count", specFile: spec("drop"), tonight: "sha256:aa", night: "sha256:aa", withOutcomes: true,
			verdict: summary.VerdictUnverified, b: 12, c: 1, wantPaired: true, minPairs: paired.DefaultMinPairs,
			wantMessage: []string{"unverified: only 100 paired documents, 200 needed"}},
		{name: "identical answers", specFile: spec("identical"), tonight: "sha256:aa", night: "sha256:aa", withOutcomes: true,
			verdict: summary.VerdictPass, wantPaired: true, wantMessage: []string{"per question"}},
		{name: "a few flips both ways", specFile: spec("flips"), tonight: "sha256:aa", night: "sha256:aa", withOutcomes: true,
			verdict: summary.VerdictPass, b: 3, c: 2, wantPaired: true},
		{name: "a real drop", specFile: spec("drop"), tonight: "sha256:aa", night: "sha256:aa", withOutcomes: true,
			verdict: summary.VerdictFail, b: 12, c: 1, wantPaired: true},
		{name: "the images differ: said so", specFile: spec("identical"), tonight: "sha256:aa", night: "sha256:bb", withOutcomes: true,
			verdict: summary.VerdictPass, wantPaired: true, wantMessage: []string{"the images differ"}},
		{name: "tonight's outcomes unreadable: unverified, not the means", specFile: spec("identical"), tonight: "sha256:aa", night: "sha256:aa", withOutcomes: true,
			tonightFile: `{"task": "gsm8k", "doc_hashes": ["a"], "scores": {"exact_match,strict-match": "1x"}}`,
			verdict:     summary.VerdictUnverified, wantMessage: []string{"not compared per question", "tonight's per-question outcomes", `metric "exact_match,strict-match": 2 scores for 1 documents`}},
		{name: "tonight's outcomes missing: unverified", specFile: spec("identical"), tonight: "sha256:aa", night: "sha256:aa", withOutcomes: true,
			tonightFile: "-", verdict: summary.VerdictUnverified, wantMessage: []string{"not compared per question", "no such file"}},
		{name: "no outcomes kept: the means decide, saying why", specFile: spec("drop"), tonight: "sha256:aa", night: "sha256:aa",
			verdict: summary.VerdictFail, wantMessage: []string{"judged on the means, not per question", "no per-question outcomes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, sum := pairedGater(t, nospec, tt.specFile, tt.tonight, tt.night, tt.withOutcomes)
			g.MinPairs = cmp.Or(tt.minPairs, 50)
			if f := filepath.Join(g.ResultsDir, "gsm8k", baseline.OutcomesFile); tt.tonightFile == "-" {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			} else if tt.tonightFile != "" {
				if err := os.WriteFile(f, []byte(tt.tonightFile), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := g.Apply(context.Background(), sum)
			if len(got) != 1 {
				t.Fatalf("Apply() = %+v, want one gate", got)
			}
			gr := got[0]
			if gr.Verdict != tt.verdict {
				t.Errorf("verdict = %q, want %q; message %q", gr.Verdict, tt.verdict, gr.Message)
			}
			if (gr.Paired != nil) != tt.wantPaired {
				t.Fatalf("Paired = %+v, want one: %v", gr.Paired, tt.wantPaired)
			}
			if gr.Paired != nil && (gr.Paired.B != tt.b || gr.Paired.C != tt.c || gr.Paired.Fail != (tt.verdict == summary.VerdictFail)) {
				t.Errorf("Paired = %+v, want b %d, c %d", gr.Paired, tt.b, tt.c)
			}
			for _, w := range tt.wantMessage {
				if !strings.Contains(gr.Message, w) {
					t.Errorf("message %q lacks %q", gr.Message, w)
				}
			}
		})
	}
}
