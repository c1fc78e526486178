package paired

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestMcNemarExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		b, c int
		want float64
	}{
		{0, 0, 1},
		{3, 2, 1},                // 2·(1+5+10)/32 = 1
		{5, 0, 2.0 / 32},         // 2·1/2^5
		{10, 0, 2.0 / 1024},      // 2·1/2^10
		{12, 1, 2 * 14.0 / 8192}, // 2·(1+13)/2^13
		{1, 12, 2 * 14.0 / 8192}, // symmetric
		{20, 2, 508.0 / 4194304}, // 2·(1+22+231)/2^22
		{50, 50, 1},
	}
	for _, tt := range tests {
		if got := McNemarExact(tt.b, tt.c); math.Abs(got-tt.want) > 1e-12*max(1, tt.want) {
			t.Errorf("McNemarExact(%d, %d) = %v, want %v", tt.b, tt.c, got, tt.want)
		}
	}
}

const (
	nospec = "testdata/nospec/samples_gsm8k_2026-08-21T01-00-00.000001.jsonl"
)

func specFile(kind string) string {
	return "testdata/spec-" + kind + "/samples_gsm8k_2026-08-21T02-00-00.000001.jsonl"
}

func TestCompareFiles(t *testing.T) {
	t.Parallel()
	// The files hold 100 documents; the test decides on 50 or more here.
	opts := Options{Filter: "strict-match", MinPairs: 50}
	base := Result{Metric: "exact_match", Filter: "strict-match", Alpha: 0.01, MinPairs: 50, AnswersKnown: true}
	tests := []struct {
		name string
		spec string
		want Result
		why  string
	}{
		{
			name: "identical answers", spec: specFile("identical"),
			want: withR(base, func(r *Result) {
				r.Pairs, r.AgreeOutcome, r.AgreeAnswer = 100, 100, 100
				r.OutcomeAgreement, r.AnswerAgreement = 1, 1
				r.BaselineScore, r.SpecScore, r.P = 0.75, 0.75, 1
			}),
			why: "pass: strict-match exact_match over 100 paired documents: 0.7500 with speculation vs 0.7500 without (Δ +0.0000); 0 right only without, 0 right only with (McNemar exact one-sided p = 1); answers identical on 100.0%; not significantly worse (p >= 0.01)",
		},
		{
			// Docs 0..97 pair up: 73 right without speculation; 1, 2, 3
			// turn wrong and 0, 4 right, so 72 with it. Docs 98 and 99 are
			// missing from the speculative run, doc 100 only in it.
			name: "a few flips both ways", spec: specFile("flips"),
			want: withR(base, func(r *Result) {
				r.Pairs, r.AgreeOutcome, r.AgreeAnswer = 98, 93, 93
				r.OutcomeAgreement, r.AnswerAgreement = 93.0/98, 93.0/98
				r.B, r.C = 3, 2
				// P(3 or more of 5) = (10+5+1)/32.
				r.BaselineScore, r.SpecScore, r.Delta, r.P = 73.0/98, 72.0/98, -1.0/98, 0.5
				r.UnmatchedBaseline, r.UnmatchedSpec = 2, 1
			}),
			why: "not significantly worse (p >= 0.01); 2 documents only without speculation and 1 only with it were left out",
		},
		{
			// Twelve right answers turn wrong and one wrong one right:
			// p = (13+1)/2^13 = 0.0017.
			name: "a real drop", spec: specFile("drop"),
			want: withR(base, func(r *Result) {
				r.Pairs, r.AgreeOutcome, r.AgreeAnswer = 100, 87, 87
				r.OutcomeAgreement, r.AnswerAgreement = 0.87, 0.87
				r.B, r.C = 12, 1
				r.BaselineScore, r.SpecScore, r.Delta, r.P = 0.75, 0.64, -0.11, 14.0/8192
				r.Fail = true
			}),
			why: "fail: strict-match exact_match over 100 paired documents: 0.6400 with speculation vs 0.7500 without (Δ -0.1100); 12 right only without, 1 right only with (McNemar exact one-sided p = 0.0017); answers identical on 87.0%; speculation answers significantly worse (p < 0.01)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := CompareFiles(nospec, tt.spec, opts)
			if err != nil {
				t.Fatalf("CompareFiles() error = %v", err)
			}
			if !strings.Contains(got.Why, tt.why) {
				t.Errorf("CompareFiles().Why = %q\nwant it to contain %q", got.Why, tt.why)
			}
			if diff := cmp.Diff(got, tt.want, cmpopts.EquateApprox(0, 1e-12), cmpopts.IgnoreFields(Result{}, "Why")); diff != "" {
				t.Errorf("CompareFiles() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func withR(r Result, f func(*Result)) Result {
	f(&r)
	return r
}

// The paired test decides alone: no tolerance lets a significant drop
// pass; too few pairs decide nothing; agreement is gated.
func TestCompareDecidesAlone(t *testing.T) {
	t.Parallel()
	r, err := CompareFiles(nospec, specFile("drop"), Options{Filter: "strict-match", MinPairs: 50, Alpha: 0.001})
	if err != nil || r.Fail || !strings.Contains(r.Why, "not significantly worse (p >= 0.001)") {
		t.Errorf("CompareFiles(alpha 0.001) = %+v, %v; want a pass, not significant", r, err)
	}
	r, err = CompareFiles(nospec, specFile("drop"), Options{Filter: "strict-match"})
	if err != nil || r.Fail || !r.Unverified || !strings.Contains(r.Why, "unverified: only 100 paired documents, 200 needed") {
		t.Errorf("CompareFiles(100 pairs) = %+v, %v; want unverified with the count", r, err)
	}
	r, err = CompareFiles(nospec, specFile("identical"), Options{Filter: "strict-match", MinPairs: 50, MinAgreement: 1})
	if err != nil || r.Fail {
		t.Errorf("CompareFiles(identical, agreement 100 %%) = %+v, %v; want a pass", r, err)
	}
	r, err = CompareFiles(nospec, specFile("flips"), Options{Filter: "strict-match", MinPairs: 50, MinAgreement: 0.98})
	if err != nil || !r.Fail || !r.AgreementFail || !strings.Contains(r.Why, "the outcomes agree on 94.9% of documents, below the 98.0% expected") {
		t.Errorf("CompareFiles(flips, agreement 98 %%) = %+v, %v; want an agreement failure", r, err)
	}
}

// 19 answers broken one way out of 1,319 fail; the old two-sided test
// with a tolerance let them pass.
func TestCompareNineteenOfMany(t *testing.T) {
	t.Parallel()
	var base, spec []Sample
	for i := range 1319 {
		h := "h" + strconv.Itoa(i)
		right := 1.0
		if i%4 == 0 {
			right = 0
		}
		base = append(base, Sample{DocID: i, DocHash: h, Filter: "f", Metrics: map[string]float64{"exact_match": right}})
		if i%4 == 1 && i < 4*19 {
			right = 0
		}
		spec = append(spec, Sample{DocID: i, DocHash: h, Filter: "f", Metrics: map[string]float64{"exact_match": right}})
	}
	r, err := Compare(base, spec, Options{})
	if err != nil || r.B != 19 || r.C != 0 || !r.Fail || math.Abs(r.P-math.Pow(2, -19)) > 1e-15 {
		t.Errorf("Compare(19 of 1319 broken) = b %d, c %d, p %v, fail %v, %v", r.B, r.C, r.P, r.Fail, err)
	}
}

// Two documents asking the same question share a doc_hash: they pair by
// doc_id and stay two.
func TestCompareDuplicateHashes(t *testing.T) {
	t.Parallel()
	lines := `{"doc_id": 0, "doc_hash": "same", "filter": "f", "metrics": ["exact_match"], "exact_match": 1}
{"doc_id": 1, "doc_hash": "same", "filter": "f", "metrics": ["exact_match"], "exact_match": 0}
{"doc_id": 2, "doc_hash": "other", "filter": "f", "metrics": ["exact_match"], "exact_match": 1}
`
	base, err := Parse(strings.NewReader(lines), "base.jsonl")
	if err != nil {
		t.Fatalf("Parse(two documents with one hash) error = %v", err)
	}
	r, err := Compare(base, base, Options{MinPairs: 1})
	if err != nil || r.Pairs != 3 || r.AgreeOutcome != 3 {
		t.Errorf("Compare(self) = %d pairs, %d alike, %v; want 3 and 3", r.Pairs, r.AgreeOutcome, err)
	}
	_, err = Parse(strings.NewReader(lines+`{"doc_id": 1, "doc_hash": "same", "filter": "f", "metrics": ["exact_match"], "exact_match": 0}`), "dup.jsonl")
	if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "dup.jsonl:4: doc_id 1, doc_hash same (filter \"f\") already on line 2") {
		t.Errorf("Parse(one document twice) error = %v", err)
	}
}

func TestMcNemarOneSided(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		b, c int
		want float64
	}{{0, 0, 1}, {0, 5, 1}, {5, 0, 1.0 / 32}, {3, 2, 16.0 / 32}, {12, 1, 14.0 / 8192}, {1, 12, 1 - 1.0/8192}} {
		if got := McNemarOneSided(tt.b, tt.c); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("McNemarOneSided(%d, %d) = %v, want %v", tt.b, tt.c, got, tt.want)
		}
	}
}

func TestLatestFile(t *testing.T) {
	t.Parallel()
	tests := []struct{ dir, task, want string }{
		{"testdata/nospec", "gsm8k", nospec},
		{"testdata/nospec", "gsm8k_cot", "testdata/nospec/samples_gsm8k_cot_2026-08-22T01-00-00.000001.jsonl"},
		{"testdata/spec-drop", "gsm8k", specFile("drop")},
	}
	for _, tt := range tests {
		got, err := LatestFile(tt.dir, tt.task)
		if err != nil || filepath.ToSlash(got) != tt.want {
			t.Errorf("LatestFile(%q, %q) = %q, %v; want %q", tt.dir, tt.task, got, err, tt.want)
		}
	}
	// lm_eval writes into a folder named after the model.
	dir := t.TempDir()
	model := filepath.Join(dir, "meta-llama__Llama-3.1-8B-Instruct")
	want := filepath.Join(model, "samples_gsm8k_2026-08-21T14-30-15.123456.jsonl")
	if err := os.MkdirAll(model, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := LatestFile(dir, "gsm8k"); err != nil || got != want {
		t.Errorf("LatestFile(model folder) = %q, %v; want %q", got, err, want)
	}
	// Three runs of one date, one folder down: which is meant is unclear.
	if _, err := LatestFile("testdata", "gsm8k"); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "are both the newest samples of gsm8k") {
		t.Errorf("LatestFile(testdata) error = %v, want a tie", err)
	}
	if _, err := LatestFile("testdata/nospec", "mmlu"); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "no samples_mmlu_<date>.jsonl in testdata/nospec") {
		t.Errorf("LatestFile(mmlu) error = %v", err)
	}
}

// line is a samples line with the keys lm_eval writes; extra replaces the
// tail after doc_hash.
func line(id int, hash, filter, tail string) string {
	return `{"doc_id": ` + strconv.Itoa(id) + `, "doc": {"q": "x"}, "target": "1", "arguments": {"gen_args_0": {"arg_0": "Q", "arg_1": {}}}, "resps": [["1"]], "filtered_resps": ["1"], "filter": "` +
		filter + `", "metrics": ["exact_match"], "doc_hash": "` + hash + `", "prompt_hash": "p", "target_hash": "t"` + tail + "}\n"
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"bad JSON", line(1, "a", "f", `, "exact_match": 1.0`) + "{not json\n", "s.jsonl:2: not a JSON object"},
		{"no doc_hash", `{"doc_id": 1, "filter": "f", "metrics": [], "exact_match": 1}` + "\n", `s.jsonl:1: no "doc_hash"`},
		{"duplicate", line(1, "a", "f", `, "exact_match": 1.0`) + line(1, "a", "f", `, "exact_match": 0.0`), "s.jsonl:2: doc_id 1, doc_hash a (filter \"f\") already on line 1"},
		{"metric not a number", line(1, "a", "f", `, "exact_match": "yes"`), `s.jsonl:1: metric "exact_match": "yes" is not a number`},
		{"metric missing", line(1, "a", "f", ``), `s.jsonl:1: metric "exact_match": missing`},
		{"doc_id not a number", strings.Replace(line(1, "a", "f", `, "exact_match": 1`), `"doc_id": 1`, `"doc_id": "one"`, 1), `s.jsonl:1: "doc_id"`},
		{"empty", "\n\n", "s.jsonl: no samples"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(strings.NewReader(tt.in), "s.jsonl")
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse() error = %v, want ErrInput containing %q", err, tt.want)
			}
		})
	}
}

func TestParseKeepsFiltersApart(t *testing.T) {
	t.Parallel()
	in := line(1, "a", "strict-match", `, "exact_match": 1.0`) + line(1, "a", "flexible-extract", `, "exact_match": false`)
	got, err := Parse(strings.NewReader(in), "s.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{
		{File: "s.jsonl", Line: 1, DocID: 1, DocHash: "a", Filter: "strict-match", Metrics: map[string]float64{"exact_match": 1}, Answer: `["1"]`},
		{File: "s.jsonl", Line: 2, DocID: 1, DocHash: "a", Filter: "flexible-extract", Metrics: map[string]float64{"exact_match": 0}, Answer: `["1"]`},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Parse() diff (-got +want):\n%s", diff)
	}
	// Older files without a "metrics" list: numbers at the top level.
	old := `{"doc_id": 3, "doc_hash": "h", "filtered_resps": ["2"], "exact_match": 0.0, "acc": true}` + "\n"
	got, err = Parse(strings.NewReader(old), "old.jsonl")
	if err != nil || len(got) != 1 || !cmp.Equal(got[0].Metrics, map[string]float64{"exact_match": 0, "acc": 1}) {
		t.Errorf("Parse(old layout) = %+v, %v", got, err)
	}
}

func TestCompareErrors(t *testing.T) {
	t.Parallel()
	parse := func(name, in string) []Sample {
		s, err := Parse(strings.NewReader(in), name)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := parse("base.jsonl", line(1, "a", "strict-match", `, "exact_match": 1.0`)+line(2, "b", "flexible-extract", `, "exact_match": 1.0`))
	half := parse("half.jsonl", line(1, "a", "strict-match", `, "exact_match": 0.5`))
	other := parse("other.jsonl", line(1, "z", "strict-match", `, "exact_match": 1`))
	tests := []struct {
		name       string
		base, spec []Sample
		opts       Options
		want       string
	}{
		{"not binary", base, half, Options{Filter: "strict-match"}, "half.jsonl:1: exact_match is 0.5; the paired test needs 0 or 1"},
		{"two filters, none chosen", base, half, Options{}, "base.jsonl has filters flexible-extract, strict-match; choose one"},
		{"filter absent", base, half, Options{Filter: "flexible-extract"}, `half.jsonl has no filter "flexible-extract" (it has strict-match)`},
		{"no pairs", half, other, Options{}, "no document of other.jsonl is in half.jsonl"},
		{"metric absent", base, base, Options{Filter: "strict-match", Metric: "acc"}, `base.jsonl:1: no metric "acc"`},
		{"bad agreement", base, base, Options{Filter: "strict-match", MinAgreement: 2}, "minimum agreement 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Compare(tt.base, tt.spec, tt.opts)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compare() error = %v, want ErrInput containing %q", err, tt.want)
			}
		})
	}
	if _, err := CompareFiles("testdata/absent.jsonl", nospec, Options{}); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "testdata/absent.jsonl") {
		t.Errorf("CompareFiles(absent) error = %v", err)
	}
}

func TestCompareOutcomesMatchesCompareFiles(t *testing.T) {
	t.Parallel()
	base, err := ReadFile(nospec)
	if err != nil {
		t.Fatal(err)
	}
	stored := Outcomes{Source: "nospec #7", Right: map[string]bool{}}
	for _, s := range base {
		if s.Filter == "strict-match" {
			stored.Right[DocKey(s.DocID, s.DocHash)] = s.Metrics["exact_match"] == 1
		}
	}
	opts := Options{Filter: "strict-match", MinPairs: 50}
	for _, kind := range []string{"identical", "flips", "drop"} {
		spec, err := ReadFile(specFile(kind))
		if err != nil {
			t.Fatal(err)
		}
		want, err := Compare(base, spec, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := CompareOutcomes(stored, spec, opts)
		if err != nil {
			t.Fatalf("CompareOutcomes(%s) error = %v", kind, err)
		}
		// Stored outcomes hold no answers; all else is the same.
		want.AnswersKnown, want.AgreeAnswer, want.AnswerAgreement = false, 0, 0
		if diff := cmp.Diff(got, want, cmpopts.IgnoreFields(Result{}, "Why")); diff != "" {
			t.Errorf("CompareOutcomes(%s) diff (-got +want):\n%s", kind, diff)
		}
		if strings.Contains(got.Why, "answers identical") || !strings.Contains(got.Why, "outcomes alike on") {
			t.Errorf("CompareOutcomes(%s).Why = %q, want outcomes, not answers", kind, got.Why)
		}
	}
	if _, err := CompareOutcomes(Outcomes{Source: "nospec #7"}, base, opts); !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), "nospec #7 has no outcomes") {
		t.Errorf("CompareOutcomes(empty) error = %v", err)
	}
}
