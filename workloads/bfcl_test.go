package workloads

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBFCLLeaves(t *testing.T) {
	t.Parallel()
	tests := []struct {
		category string
		want     []string
		ok       bool
	}{
		{"simple_python", []string{"simple_python"}, true},
		{"multi_turn", []string{"multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func", "multi_turn_miss_param"}, true},
		{"web_search", []string{"web_search_base", "web_search_no_snippet"}, true},
		{"memory", []string{"memory_kv", "memory_rec_sum", "memory_vector"}, true},
		{"simple", nil, false},
		{"", nil, false},
	}
	for _, tt := range tests {
		got, ok := BFCLLeaves(tt.category)
		if diff := cmp.Diff(got, tt.want); diff != "" || ok != tt.ok {
			t.Errorf("BFCLLeaves(%q) = %v, %v; want ok %v, diff (-got +want):\n%s", tt.category, got, ok, tt.ok, diff)
		}
	}
	all, _ := BFCLLeaves("all")
	// bfcl_eval's ALL_CATEGORIES: the scoring ones and format_sensitivity.
	if len(all) != 23 || !slices.Contains(all, "format_sensitivity") {
		t.Errorf("BFCLLeaves(all) = %v, want 23 leaves (7 non-live, 6 live, 4 multi-turn, 5 agentic, format_sensitivity)", all)
	}
	scoring, _ := BFCLLeaves("all_scoring")
	if len(scoring) != 22 || slices.Contains(scoring, "format_sensitivity") {
		t.Errorf("BFCLLeaves(all_scoring) = %v, want the 22 scoring leaves", scoring)
	}
}

// bfclHead is lintHead on a server that answers tool calls, in as many
// lines.
const bfclHead = "name: ok\ngpu: MI355X\nnum_gpus: 8\nvllm: {model: org/m, serve_args: --enable-auto-tool-choice --tool-call-parser hermes}\n"

func TestParseBFCLGates(t *testing.T) {
	t.Parallel()
	src := bfclHead + `bfcl:
  test_categories: [simple_python, multi_turn]
  num_threads: 8
  max_test_cases: {multi_turn: 10}
  expect:
    simple_python: {min: 0.85}
    multi_turn:
      - {baseline: 0.5, tolerance: 0.05}
      - {baseline_from: other, tolerance: 0.02}
    multi_turn_base: {min: 0.3}
`
	r, ps := Parse("r.yaml", []byte(src), defaultProfiles(t))
	if ps.Errors() != nil {
		t.Fatalf("Parse() problems = %v", ps)
	}
	f := func(v float64) *float64 { return &v }
	want := []BFCLGate{
		{"simple_python", Expectation{Metric: "acc", Min: f(0.85), Line: 10}},
		{"multi_turn", Expectation{Metric: "acc", Baseline: f(0.5), Tolerance: 0.05, Line: 12}},
		{"multi_turn", Expectation{Metric: "acc", BaselineFrom: "other", Tolerance: 0.02, Line: 13}},
		{"multi_turn_base", Expectation{Metric: "acc", Min: f(0.3), Line: 14}},
	}
	if diff := cmp.Diff(r.BFCL.Gates, want); diff != "" {
		t.Errorf("Parse().BFCL.Gates diff (-got +want):\n%s", diff)
	}
}

func TestParseBFCLHostile(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	tests := []struct {
		name string
		bfcl string
		want []finding
	}{
		{
			name: "unknown category with a suggestion",
			bfcl: "bfcl: {test_categories: [simple_pyhton]}\n",
			want: []finding{{"5:26", `unknown bfcl test category "simple_pyhton" (bfcl-eval 2026.3.23); did you mean simple_python`}},
		},
		{
			name: "group without an overall score",
			bfcl: "bfcl: {test_categories: [python]}\n",
			want: []finding{{"5:26", "bfcl test category python has no overall score"}},
		},
		{
			name: "format_sensitivity is not scored",
			bfcl: "bfcl: {test_categories: [format_sensitivity]}\n",
			want: []finding{{"5:26", "format_sensitivity is not scored"}},
		},
		{
			name: "too few test cases for the leaves of a group",
			bfcl: "bfcl:\n  test_categories: [multi_turn]\n  max_test_cases:\n    multi_turn: 3\n",
			want: []finding{{"8:5", "bfcl.max_test_cases.multi_turn is 3, below 8: the run splits it over 4 sub-categories"}},
		},
		{
			name: "gate on a category not run",
			bfcl: "bfcl:\n  test_categories: [simple_python]\n  expect:\n    multiple: {min: 0.5}\n",
			want: []finding{{"8:5", `bfcl.expect names "multiple", which is neither in test_categories nor a sub-category`}},
		},
		{
			name: "gate as a percentage",
			bfcl: "bfcl:\n  test_categories: [simple_python]\n  expect:\n    simple_python: {min: 85}\n",
			want: []finding{{"8:26", "bfcl.expect.simple_python.min must be between 0 and 1, got 85"}},
		},
		{
			name: "gate names a metric",
			bfcl: "bfcl:\n  test_categories: [simple_python]\n  expect:\n    simple_python: {metric: acc, min: 0.8}\n",
			want: []finding{{"8:21", `unknown field "metric" in bfcl.expect.simple_python`}},
		},
		{
			name: "gate needs a bound",
			bfcl: "bfcl:\n  test_categories: [simple_python]\n  expect:\n    simple_python: {tolerance: 0.1}\n",
			want: []finding{{"8:20", "bfcl.expect.simple_python needs min, baseline or baseline_from"}},
		},
		{
			name: "baseline and baseline_from",
			bfcl: "bfcl:\n  test_categories: [simple_python]\n  expect:\n    simple_python: {baseline: 0.8, baseline_from: x}\n",
			want: []finding{{"8:20", "baseline and baseline_from exclude each other"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, ps := Parse("r.yaml", []byte(bfclHead+tt.bfcl), profiles)
			errs := ps.Errors()
			if diff := cmp.Diff(findings(t, "r.yaml", errs, tt.want), tt.want); diff != "" {
				t.Errorf("Parse() problems diff (-got +want):\n%s\nall:\n%v", diff, ps)
			}
			if r != nil {
				t.Errorf("Parse() recipe = %+v, want nil", r)
			}
		})
	}
}

// A serve_args that cannot be read yields its own error only: the flags
// bfcl needs may well be in it, so the bfcl check stays quiet.
func TestBFCLUnreadServeArgs(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	const tail = "bfcl: {test_categories: [simple_python]}\n"
	tests := []struct {
		name string
		vllm string
		want []finding
	}{
		{
			name: "shell operator beside both flags",
			vllm: "vllm: {model: org/m, serve_args: --enable-auto-tool-choice --tool-call-parser hermes && echo hi}\n",
			want: []finding{{"4:86", `unquoted '&' in "&& echo hi": serve_args are an argument list, not a shell command`}},
		},
		{
			name: "not a string",
			vllm: "vllm:\n  model: org/m\n  serve_args: [--enable-auto-tool-choice]\n",
			want: []finding{{"6:15", "vllm.serve_args"}},
		},
		{
			name: "both flags missing",
			vllm: "vllm: {model: org/m, serve_args: --max-model-len 4096}\n",
			want: []finding{{"5:1", "bfcl needs vllm.serve_args --enable-auto-tool-choice and --tool-call-parser <parser>"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := "name: ok\ngpu: MI355X\nnum_gpus: 8\n" + tt.vllm + tail
			_, ps := Parse("r.yaml", []byte(src), profiles)
			if diff := cmp.Diff(findings(t, "r.yaml", ps.Errors(), tt.want), tt.want); diff != "" {
				t.Errorf("Parse() problems diff (-got +want):\n%s\nall:\n%v", diff, ps)
			}
		})
	}
}
