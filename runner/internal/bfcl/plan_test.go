package bfcl

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSplit(t *testing.T) {
	t.Parallel()
	mt := []string{"multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func", "multi_turn_miss_param"}
	tests := []struct {
		n      int
		leaves []string
		want   []Quota
	}{
		{240, mt, []Quota{{"multi_turn_base", 60}, {"multi_turn_long_context", 60}, {"multi_turn_miss_func", 60}, {"multi_turn_miss_param", 60}}},
		{10, mt, []Quota{{"multi_turn_base", 3}, {"multi_turn_long_context", 3}, {"multi_turn_miss_func", 2}, {"multi_turn_miss_param", 2}}},
		{8, mt, []Quota{{"multi_turn_base", 2}, {"multi_turn_long_context", 2}, {"multi_turn_miss_func", 2}, {"multi_turn_miss_param", 2}}},
		{7, []string{"simple_python"}, []Quota{{"simple_python", 7}}},
	}
	for _, tt := range tests {
		got, err := Split(tt.n, tt.leaves)
		if err != nil {
			t.Errorf("Split(%d, %v) error = %v", tt.n, tt.leaves, err)
			continue
		}
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("Split(%d, %v) diff (-got +want):\n%s", tt.n, tt.leaves, diff)
		}
	}
	// BFCL's evaluation fails on a sub-category of one entry.
	for _, n := range []int{3, 4, 7} {
		if got, err := Split(n, mt); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d test entries cannot give each of 4 sub-categories", n)) {
			t.Errorf("Split(%d, multi_turn leaves) = %v, %v; want an error", n, got, err)
		}
	}
	if got, err := Split(1, []string{"simple_python"}); err == nil {
		t.Errorf("Split(1, simple_python) = %v; want an error", got)
	}
}

func TestPlans(t *testing.T) {
	t.Parallel()
	temp := 0.5
	b := &workloads.BFCL{
		TestCategories:   []string{"simple_python", "multi_turn"},
		NumThreads:       16,
		Temperature:      &temp,
		MaximumStepLimit: 7,
		MaxTestCases:     map[string]int{"multi_turn": 240},
		Gates: []workloads.BFCLGate{
			{Category: "simple_python", Expect: workloads.Expectation{Metric: "acc", Min: &temp}},
			{Category: "multi_turn_base", Expect: workloads.Expectation{Metric: "acc", BaselineFrom: "x", Tolerance: 0.1}},
		},
	}
	mt := []string{"multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func", "multi_turn_miss_param"}
	tests := []struct {
		name string
		env  map[string]string
		want []Plan
	}{
		{
			name: "recipe settings",
			want: []Plan{
				{Category: "simple_python", Leaves: []string{"simple_python"}, NumThreads: 16, Temperature: 0.5, MaximumStepLimit: 7, StepLimitFrom: "recipe", Gates: b.Gates[:1]},
				{Category: "multi_turn", Leaves: mt, NumThreads: 16, Temperature: 0.5, MaximumStepLimit: 7, StepLimitFrom: "recipe",
					MaxTestCases: 240, MaxTestCasesFrom: "recipe",
					Quotas: []Quota{{"multi_turn_base", 60}, {"multi_turn_long_context", 60}, {"multi_turn_miss_func", 60}, {"multi_turn_miss_param", 60}},
					Gates:  b.Gates[1:]},
			},
		},
		{
			name: "env wins",
			env:  map[string]string{EnvMaximumStepLimit: "3", EnvMaxTestCases: " 10 "},
			want: []Plan{
				{Category: "simple_python", Leaves: []string{"simple_python"}, NumThreads: 16, Temperature: 0.5, MaximumStepLimit: 3, StepLimitFrom: "env BFCL_MAXIMUM_STEP_LIMIT",
					MaxTestCases: 10, MaxTestCasesFrom: "env BFCL_MAX_TEST_CASES", Quotas: []Quota{{"simple_python", 10}}, Gates: b.Gates[:1]},
				{Category: "multi_turn", Leaves: mt, NumThreads: 16, Temperature: 0.5, MaximumStepLimit: 3, StepLimitFrom: "env BFCL_MAXIMUM_STEP_LIMIT",
					MaxTestCases: 10, MaxTestCasesFrom: "env BFCL_MAX_TEST_CASES",
					Quotas: []Quota{{"multi_turn_base", 3}, {"multi_turn_long_context", 3}, {"multi_turn_miss_func", 2}, {"multi_turn_miss_param", 2}},
					Gates:  b.Gates[1:]},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Plans(b, envOf(tt.env))
			if err != nil {
				t.Fatalf("Plans() error = %v", err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Plans() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestPlansDefaults(t *testing.T) {
	t.Parallel()
	got, err := Plans(&workloads.BFCL{TestCategories: []string{"multiple"}}, envOf(nil))
	if err != nil {
		t.Fatalf("Plans() error = %v", err)
	}
	want := []Plan{{Category: "multiple", Leaves: []string{"multiple"}, NumThreads: 1, Temperature: 0.001, MaximumStepLimit: 10, StepLimitFrom: "default"}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Plans() diff (-got +want):\n%s", diff)
	}
}

func TestPlansErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		b    *workloads.BFCL
		env  map[string]string
		want string
	}{
		{"unknown category", &workloads.BFCL{TestCategories: []string{"simple"}}, nil, `bfcl: unknown test category "simple" (bfcl-eval 2026.3.23)`},
		{"bad step limit", &workloads.BFCL{TestCategories: []string{"multiple"}}, map[string]string{EnvMaximumStepLimit: "ten"}, `BFCL_MAXIMUM_STEP_LIMIT="ten": want a whole number`},
		{"zero test cases", &workloads.BFCL{TestCategories: []string{"multiple"}}, map[string]string{EnvMaxTestCases: "0"}, `BFCL_MAX_TEST_CASES="0": want a whole number`},
		{"env too small for a group", &workloads.BFCL{TestCategories: []string{"multi_turn"}}, map[string]string{EnvMaxTestCases: "2"},
			"bfcl multi_turn: max_test_cases from env BFCL_MAX_TEST_CASES: 2 test entries cannot give each of 4 sub-categories"},
		{"memory subsampled", &workloads.BFCL{TestCategories: []string{"agentic"}, MaxTestCases: map[string]int{"agentic": 50}}, nil,
			"bfcl agentic: max_test_cases from recipe: subsampling memory_kv is not supported"},
	}
	for _, tt := range tests {
		got, err := Plans(tt.b, envOf(tt.env))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Plans() = %v, %v; want error containing %q", tt.name, got, err, tt.want)
		}
	}
}

func TestPlanString(t *testing.T) {
	t.Parallel()
	min := 0.8
	got, err := Plans(&workloads.BFCL{
		TestCategories: []string{"simple_python", "multi_turn"},
		NumThreads:     8,
		MaxTestCases:   map[string]int{"multi_turn": 10},
		Gates:          []workloads.BFCLGate{{Category: "multi_turn", Expect: workloads.Expectation{Metric: "acc", Min: &min}}},
	}, envOf(nil))
	if err != nil {
		t.Fatalf("Plans() error = %v", err)
	}
	want := []string{
		"bfcl_simple_python: bfcl-eval 2026.3.23, category simple_python, 8 threads, temperature 0.001, step limit 10 (default), every test entry",
		"bfcl_multi_turn: bfcl-eval 2026.3.23, category multi_turn (multi_turn_base, multi_turn_long_context, multi_turn_miss_func, multi_turn_miss_param), " +
			"8 threads, temperature 0.001, step limit 10 (default), first 10 test entries (recipe; multi_turn_base 3, multi_turn_long_context 3, " +
			"multi_turn_miss_func 2, multi_turn_miss_param 2), partial evaluation; gate bfcl_multi_turn acc >= 0.8",
	}
	var lines []string
	for _, p := range got {
		lines = append(lines, p.String())
	}
	if diff := cmp.Diff(lines, want); diff != "" {
		t.Errorf("Plan.String() diff (-got +want):\n%s", diff)
	}
}

// TestReferenceRecipesPlan loads perf-eval's recipes and plans the
// categories of every one with a bfcl block.
func TestReferenceRecipesPlan(t *testing.T) {
	t.Parallel()
	root := testutil.ReferenceDir(t, "perf-eval")
	profiles, err := agents.Default()
	if err != nil {
		t.Fatalf("agents.Default() error = %v", err)
	}
	c, err := workloads.LoadDir(os.DirFS(root), "workloads", profiles)
	if err != nil {
		t.Fatalf("LoadDir() error = %v", err)
	}
	for path, ps := range c.Invalid {
		t.Errorf("%s does not load:\n%v", path, ps)
	}
	withBFCL := 0
	for _, r := range c.Recipes {
		if r.BFCL == nil {
			continue
		}
		withBFCL++
		res, err := workloads.Resolve(r, profiles, envOf(nil))
		if err != nil {
			t.Errorf("Resolve(%s) error = %v", r.Name, err)
			continue
		}
		plans, err := Plans(res.BFCL, envOf(nil))
		if err != nil {
			t.Errorf("Plans(%s) error = %v", r.Name, err)
			continue
		}
		if len(plans) != len(r.BFCL.TestCategories) {
			t.Errorf("Plans(%s) planned %d runs for %d categories", r.Name, len(plans), len(r.BFCL.TestCategories))
		}
		for _, p := range plans {
			if p.Category == "multi_turn" && len(p.Leaves) != 4 {
				t.Errorf("%s: multi_turn has leaves %v, want 4", r.Name, p.Leaves)
			}
			if n, ok := r.BFCL.MaxTestCases[p.Category]; ok {
				sum := 0
				for _, q := range p.Quotas {
					sum += q.Max
				}
				if sum != n || len(p.Quotas) != len(p.Leaves) {
					t.Errorf("%s %s: quotas %v, want %d over %d leaves", r.Name, p.Category, p.Quotas, n, len(p.Leaves))
				}
			}
		}
	}
	if withBFCL != 10 {
		t.Errorf("%d reference recipes have a bfcl block, want 10", withBFCL)
	}
}

func TestNeedsTorch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		category string
		want     []string
	}{
		{"simple_python", nil},
		{"multi_turn", nil},
		{"memory_kv", nil},
		{"memory_vector", []string{"memory_vector"}},
		{"memory", []string{"memory_vector"}},
		{"agentic", []string{"memory_vector"}},
	}
	for _, tt := range tests {
		plans, err := Plans(&workloads.BFCL{TestCategories: []string{tt.category}}, envOf(nil))
		if err != nil {
			t.Fatalf("Plans(%s) error = %v", tt.category, err)
		}
		if diff := cmp.Diff(plans[0].NeedsTorch(), tt.want); diff != "" {
			t.Errorf("%s NeedsTorch() diff (-got +want):\n%s", tt.category, diff)
		}
	}
}
