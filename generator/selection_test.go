package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/steps"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// recipeYAML is a small valid recipe; extra is added at the top level.
func recipeYAML(name, gpu, extra string) string {
	return fmt.Sprintf(`name: %s
gpu: %s
num_gpus: 1
%s
vllm:
  model: org/model
lm_eval:
  tasks:
    - name: gsm8k
      num_fewshot: 5
vllm_bench:
  configs:
    - name: short
      backend: openai
      input_len: 128
      output_len: 128
      num_prompts: 8
      max_concurrency: 4
`, name, gpu, extra)
}

// testCatalog is a catalog with one recipe of each kind selection tells
// apart, parsed as the loader parses files.
func testCatalog(t *testing.T) (*workloads.Catalog, *agents.Set) {
	t.Helper()
	profiles, err := agents.Default()
	if err != nil {
		t.Fatal(err)
	}
	files := []struct{ path, src string }{
		{"workloads/alpha_h200.yaml", recipeYAML("alpha-h200", "H200", "nightly: true")},
		{"workloads/beta_mi355x.yaml", recipeYAML("beta-mi355x", "MI355X", "nightly: true\nblocked_by: [vllm-project/vllm#1, vllm-project/vllm#2]")},
		{"workloads/broken.yaml", recipeYAML("broken", "H100", "nightly: true")},
		{"workloads/delta_mi355x.yaml", recipeYAML("delta-mi355x", "MI355X", "nightly: true\nbench_only: true")},
		{"workloads/gamma_b200.yaml", recipeYAML("gamma-b200", "B200", "nightly: false")},
		{"workloads/mi300x recipe.yaml", recipeYAML("epsilon-mi300x", "MI300X", "nightly: true")},
	}
	cat := &workloads.Catalog{Dir: "workloads", Invalid: map[string]workloads.Problems{}}
	for _, f := range files {
		r, problems := workloads.Parse(f.path, []byte(f.src), profiles)
		if r == nil {
			cat.Invalid[f.path] = problems.Errors()
			continue
		}
		if len(problems) > 0 {
			t.Fatalf("%s: unexpected warnings: %v", f.path, problems)
		}
		cat.Recipes = append(cat.Recipes, r)
	}
	if len(cat.Recipes) != 5 || len(cat.Invalid) != 1 {
		t.Fatalf("test catalog has %d recipes and %d invalid files, want 5 and 1: %v", len(cat.Recipes), len(cat.Invalid), cat.Invalid)
	}
	return cat, profiles
}

// selected is the part of a selection.Selection the tests compare.
type selected struct {
	Mode     selection.Mode
	Runs     []string // name, with " (soft fail)" when it soft-fails
	Skipped  []string // "name: reason"
	Invalid  []string
	Notes    []string
	Nightly  bool
	BenchOff bool
	Changed  []string
}

func project(sel *selection.Selection) selected {
	p := selected{Mode: sel.Mode, Notes: sel.Notes, Nightly: sel.Nightly, BenchOff: sel.BenchOff, Changed: sel.Changed}
	for _, r := range sel.Runs {
		s := r.Recipe.Name
		if r.SoftFail {
			s += " (soft fail)"
		}
		p.Runs = append(p.Runs, s)
	}
	for _, s := range sel.Skipped {
		p.Skipped = append(p.Skipped, s.Name+": "+s.Reason)
	}
	for _, inv := range sel.Invalid {
		p.Invalid = append(p.Invalid, inv.Path)
	}
	return p
}

func TestSelect(t *testing.T) {
	t.Parallel()
	cat, _ := testCatalog(t)
	nightlySkips := []string{"beta-mi355x: blocked by vllm-project/vllm#1, vllm-project/vllm#2", "gamma-b200: nightly: false"}
	nightlyRuns := []string{"alpha-h200", "delta-mi355x", "epsilon-mi300x"}
	broken := []string{"workloads/broken.yaml"}
	pr := func(extra selection.BuildEnv) selection.BuildEnv {
		extra.PullRequest, extra.BaseBranch, extra.Source = "42", "main", "webhook"
		return extra
	}
	tests := []struct {
		name    string
		env     selection.BuildEnv
		changes *selection.Changes
		want    selected
		wantErr string
	}{
		{
			name: "no WORKLOADS, not a PR: the nightly set without NIGHTLY",
			env:  selection.BuildEnv{Source: "ui", PullRequest: "false"},
			want: selected{Mode: selection.ModeDefault, Runs: nightlyRuns, Skipped: nightlySkips, Invalid: broken},
		},
		{
			name: "scheduled build: the nightly set with NIGHTLY",
			env:  selection.BuildEnv{Source: "schedule"},
			want: selected{Mode: selection.ModeNightly, Runs: nightlyRuns, Skipped: nightlySkips, Invalid: broken, Nightly: true},
		},
		{
			name: "scheduled build on a PR branch is still the nightly",
			env:  selection.BuildEnv{Source: "schedule", PullRequest: "42", BaseBranch: "main"},
			want: selected{Mode: selection.ModeNightly, Runs: nightlyRuns, Skipped: nightlySkips, Invalid: broken, Nightly: true},
		},
		{
			name: "BENCH_ONLY carries to the selection",
			env:  selection.BuildEnv{Source: "schedule", BenchOnly: true},
			want: selected{Mode: selection.ModeNightly, Runs: nightlyRuns, Skipped: nightlySkips, Invalid: broken, Nightly: true, BenchOff: true},
		},
		{
			name: "WORKLOADS by name, stem, file name and path, in the order given",
			env:  selection.BuildEnv{Workloads: "gamma-b200, alpha_h200\ndelta_mi355x.yaml,\r\nworkloads/mi300x recipe.yaml"},
			want: selected{Mode: selection.ModeExplicit, Runs: []string{"gamma-b200", "alpha-h200", "delta-mi355x", "epsilon-mi300x"}},
		},
		{
			name: "WORKLOADS naming one recipe twice runs it once",
			env:  selection.BuildEnv{Workloads: "alpha-h200,alpha_h200.yaml,./workloads/alpha_h200.yaml"},
			want: selected{Mode: selection.ModeExplicit, Runs: []string{"alpha-h200"}},
		},
		{
			name: "WORKLOADS in a scheduled build wins, and keeps NIGHTLY",
			env:  selection.BuildEnv{Workloads: "alpha-h200", Source: "schedule"},
			want: selected{Mode: selection.ModeExplicit, Runs: []string{"alpha-h200"}, Nightly: true},
		},
		{
			name: "WORKLOADS in a PR build wins over the diff",
			env:  pr(selection.BuildEnv{Workloads: "alpha-h200"}),
			want: selected{Mode: selection.ModeExplicit, Runs: []string{"alpha-h200"}},
		},
		{
			name: "a blocked recipe asked for runs with soft fail",
			env:  selection.BuildEnv{Workloads: "beta-mi355x"},
			want: selected{Mode: selection.ModeExplicit, Runs: []string{"beta-mi355x (soft fail)"}},
		},
		{
			name: "an invalid recipe asked for becomes a failing step",
			env:  selection.BuildEnv{Workloads: "broken,alpha-h200"},
			want: selected{Mode: selection.ModeExplicit, Runs: []string{"alpha-h200"}, Invalid: broken},
		},
		{
			name:    "an unknown entry is an error with close matches",
			env:     selection.BuildEnv{Workloads: "alpha-h200,alpha-h100,zzzzzzzzzzzzzzzzzzzz"},
			wantErr: "WORKLOADS names no recipe: alpha-h100 (close: alpha-h200, gamma-b200); zzzzzzzzzzzzzzzzzzzz",
		},
		{
			name:    "WORKLOADS of separators only is an error",
			env:     selection.BuildEnv{Workloads: ",\n , "},
			wantErr: "WORKLOADS is set but names nothing",
		},
		{
			name: "blank WORKLOADS is no WORKLOADS",
			env:  selection.BuildEnv{Workloads: " \n "},
			want: selected{Mode: selection.ModeDefault, Runs: nightlyRuns, Skipped: nightlySkips, Invalid: broken},
		},
		{
			name:    "PR: the recipes it changes, blocked ones soft-failing, nightly: false ones too",
			env:     pr(selection.BuildEnv{}),
			changes: &selection.Changes{Files: []string{"workloads/beta_mi355x.yaml", "workloads/gamma_b200.yaml", "README.md"}},
			want: selected{Mode: selection.ModePR, Runs: []string{"beta-mi355x (soft fail)", "gamma-b200"},
				Changed: []string{"workloads/beta_mi355x.yaml", "workloads/gamma_b200.yaml", "README.md"}},
		},
		{
			name:    "PR: paths compare cleaned",
			env:     pr(selection.BuildEnv{}),
			changes: &selection.Changes{Files: []string{"./workloads//alpha_h200.yaml"}},
			want:    selected{Mode: selection.ModePR, Runs: []string{"alpha-h200"}, Changed: []string{"./workloads//alpha_h200.yaml"}},
		},
		{
			name:    "PR: a changed GPU profile runs every recipe of that GPU, once",
			env:     pr(selection.BuildEnv{}),
			changes: &selection.Changes{Files: []string{"agents/profiles.yaml", "workloads/delta_mi355x.yaml"}, Profiles: []string{"MI355X"}},
			want: selected{Mode: selection.ModePR, Runs: []string{"beta-mi355x (soft fail)", "delta-mi355x"},
				Changed: []string{"agents/profiles.yaml", "workloads/delta_mi355x.yaml"}},
		},
		{
			name:    "PR: a changed invalid recipe becomes a failing step",
			env:     pr(selection.BuildEnv{}),
			changes: &selection.Changes{Files: []string{"workloads/broken.yaml"}},
			want:    selected{Mode: selection.ModePR, Invalid: broken, Changed: []string{"workloads/broken.yaml"}},
		},
		{
			name:    "PR: code only runs no GPU step and says so",
			env:     pr(selection.BuildEnv{}),
			changes: &selection.Changes{Files: []string{"runner/main.go"}},
			want: selected{Mode: selection.ModePR, Changed: []string{"runner/main.go"},
				Notes: []string{"This PR changes no recipe and no GPU profile, so no GPU step runs. Set WORKLOADS on a new build to run recipes anyway."}},
		},
		{
			name:    "PR: a profile edit that changes no GPU runs nothing",
			env:     pr(selection.BuildEnv{}),
			changes: &selection.Changes{Files: []string{"agents/profiles.yaml"}},
			want: selected{Mode: selection.ModePR, Changed: []string{"agents/profiles.yaml"},
				Notes: []string{"This PR changes no recipe and no GPU profile, so no GPU step runs. Set WORKLOADS on a new build to run recipes anyway."}},
		},
		{
			name:    "PR: git failed, so nothing runs and the note says why",
			env:     pr(selection.BuildEnv{}),
			changes: &selection.Changes{Err: errors.New("no merge base of HEAD and origin/main: exit status 128")},
			want: selected{Mode: selection.ModePR,
				Notes: []string{unknownNote("no merge base of HEAD and origin/main: exit status 128")}},
		},
		{
			name: "PR: no change list at all, so nothing runs",
			env:  pr(selection.BuildEnv{}),
			want: selected{Mode: selection.ModePR, Notes: []string{unknownNote("no change list")}},
		},
		{
			name:    "PR: the notes name the fetches a shallow checkout took",
			env:     pr(selection.BuildEnv{}),
			changes: &selection.Changes{Files: []string{"README.md"}, Fetches: []string{"git fetch origin main", "git fetch --deepen=50 origin main"}},
			want: selected{Mode: selection.ModePR, Changed: []string{"README.md"}, Notes: []string{
				"The checkout was shallow; found the merge base after: git fetch origin main, then git fetch --deepen=50 origin main.",
				"This PR changes no recipe and no GPU profile, so no GPU step runs. Set WORKLOADS on a new build to run recipes anyway."}},
		},
		{
			name:    "BUILDKITE_PULL_REQUEST=false is not a PR",
			env:     selection.BuildEnv{PullRequest: "false", BaseBranch: "main"},
			changes: &selection.Changes{Files: []string{"workloads/alpha_h200.yaml"}},
			want:    selected{Mode: selection.ModeDefault, Runs: nightlyRuns, Skipped: nightlySkips, Invalid: broken},
		},
		{
			name: "BUILDKITE_PULL_REQUEST=0 is not a PR",
			env:  selection.BuildEnv{PullRequest: "0"},
			want: selected{Mode: selection.ModeDefault, Runs: nightlyRuns, Skipped: nightlySkips, Invalid: broken},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sel, err := selection.Select(cat, tt.env, tt.changes)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("selection.Select() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("selection.Select() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, project(sel)); diff != "" {
				t.Errorf("selection.Select() diff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadBuildEnv(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		benchOnly string
		want      bool
	}{
		{"", false}, {"0", false}, {"false", false}, {"no", false},
		{"1", true}, {"true", true}, {" TRUE ", true}, {"yes", true}, {"on", true},
	} {
		env := selection.ReadBuildEnv(mapEnv(map[string]string{"BENCH_ONLY": tt.benchOnly}))
		if env.BenchOnly != tt.want {
			t.Errorf("BENCH_ONLY=%q read as %v, want %v", tt.benchOnly, env.BenchOnly, tt.want)
		}
	}
	got := selection.ReadBuildEnv(mapEnv(map[string]string{
		"WORKLOADS": "a,b", "BUILDKITE_SOURCE": "schedule", "BUILDKITE_PULL_REQUEST": "7", "BUILDKITE_PULL_REQUEST_BASE_BRANCH": "main",
	}))
	want := selection.BuildEnv{Workloads: "a,b", Source: "schedule", PullRequest: "7", BaseBranch: "main"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("selection.ReadBuildEnv() diff (-want +got):\n%s", diff)
	}
}

// The selection reaches the steps as env: NIGHTLY for scheduled builds,
// BENCH_ONLY from the build or the recipe, soft_fail for blocked recipes.
func TestAssembleStepEnv(t *testing.T) {
	t.Parallel()
	cat, profiles := testCatalog(t)
	type stepEnv struct {
		Key      string
		Env      map[string]string
		SoftFail bool
	}
	tests := []struct {
		name string
		env  selection.BuildEnv
		want []stepEnv
	}{
		{
			name: "nightly",
			env:  selection.BuildEnv{Source: "schedule"},
			want: []stepEnv{
				{Key: "recipe:alpha-h200", Env: map[string]string{"NIGHTLY": "1", "VLLM_IMAGE": "vllm/vllm-openai:nightly"}},
				{Key: "recipe:delta-mi355x", Env: map[string]string{"NIGHTLY": "1", "BENCH_ONLY": "1", "VLLM_IMAGE": "vllm/vllm-openai-rocm:nightly"}},
				{Key: "recipe:epsilon-mi300x", Env: map[string]string{"NIGHTLY": "1", "VLLM_IMAGE": "vllm/vllm-openai-rocm:nightly"}},
				{Key: "invalid:workloads-broken.yaml", Env: map[string]string{"BENCHKITE_PROBLEMS": cat.Invalid["workloads/broken.yaml"].Error()}},
			},
		},
		{
			name: "BENCH_ONLY and a blocked recipe asked for",
			env:  selection.BuildEnv{Workloads: "alpha-h200,beta-mi355x", BenchOnly: true},
			want: []stepEnv{
				{Key: "recipe:alpha-h200", Env: map[string]string{"BENCH_ONLY": "1", "VLLM_IMAGE": "vllm/vllm-openai:nightly"}},
				{Key: "recipe:beta-mi355x", Env: map[string]string{"BENCH_ONLY": "1", "VLLM_IMAGE": "vllm/vllm-openai-rocm:nightly"}, SoftFail: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sel, err := selection.Select(cat, tt.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			p, err := assemble(sel, profiles, pipelineOptions{getenv: mapEnv(nil)})
			if err != nil {
				t.Fatal(err)
			}
			var got []stepEnv
			for _, s := range p.Steps {
				c, ok := s.(steps.CommandStep)
				if !ok {
					t.Fatalf("step %#v is not a command step", s)
				}
				if !strings.HasPrefix(c.Key, "recipe:") && !strings.HasPrefix(c.Key, "invalid:") {
					continue // the report and notes steps run no recipe
				}
				got = append(got, stepEnv{Key: c.Key, Env: c.Env, SoftFail: c.SoftFail.Any})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("step env diff (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectionNotesListBlockedRecipes(t *testing.T) {
	t.Parallel()
	cat, _ := testCatalog(t)
	env := selection.BuildEnv{Source: "schedule"}
	sel, err := selection.Select(cat, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	notes := selection.Notes(sel, env)
	for _, want := range []string{
		"### benchkite: 3 recipes in the nightly (scheduled build)\n",
		"| `alpha-h200` | H200 | scheduled build |\n",
		"**Invalid recipes** (their step fails; nothing reaches a GPU):\n\n```\nworkloads/broken.yaml:2:6: unknown gpu \"H100\"",
		"- `beta-mi355x`: blocked by vllm-project/vllm#1, vllm-project/vllm#2\n",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes do not say %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "gamma-b200") {
		t.Errorf("notes list a recipe that is simply not nightly:\n%s", notes)
	}
}

func TestSplitList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , \n,\r\n", nil},
		{"a", []string{"a"}},
		{"a,b", []string{"a", "b"}},
		{" a ,\tb\t", []string{"a", "b"}},
		{"a\nb\r\nc", []string{"a", "b", "c"}},
		{"a,,b\n\nc,", []string{"a", "b", "c"}},
		{"workloads/with space.yaml, b", []string{"workloads/with space.yaml", "b"}},
		{"a,a", []string{"a", "a"}}, // duplicates are selection.Select's business
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, selection.SplitList(tt.in)); diff != "" {
			t.Errorf("selection.SplitList(%q) diff (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestMatchesRecipe(t *testing.T) {
	t.Parallel()
	const p, name = "workloads/gpt_oss_120b_b200.yaml", "gpt_oss_120b-b200"
	tests := []struct {
		want string
		ok   bool
	}{
		{"gpt_oss_120b-b200", true},                  // name
		{"workloads/gpt_oss_120b_b200.yaml", true},   // path as loaded
		{"./workloads/gpt_oss_120b_b200.yaml", true}, // path with ./
		{"gpt_oss_120b_b200.yaml", true},             // file name
		{"gpt_oss_120b_b200", true},                  // stem
		{"/abs/checkout/workloads/gpt_oss_120b_b200.yaml", true},
		{"gpt_oss_120b-b20", false},
		{"gpt_oss_120b", false},
		{"b200", false},
		{"gpt_oss_120b_b200.yml", false},
		{"workloads/gpt_oss_120b-b200", false},
		{"GPT_OSS_120B-B200", false},
		{"", false},
		{"yaml", false},
		{".yaml", false},
		{"xgpt_oss_120b_b200.yaml", false},
	}
	for _, tt := range tests {
		if got := selection.MatchesRecipe(p, name, tt.want); got != tt.ok {
			t.Errorf("selection.MatchesRecipe(%q, %q, %q) = %v, want %v", p, name, tt.want, got, tt.ok)
		}
	}
	// Invalid files have no name: an empty want must not match it.
	if selection.MatchesRecipe("workloads/broken.yaml", "", "") {
		t.Error("an empty entry matches a nameless recipe")
	}
}

// unknownNote is the note of a PR build whose changes git could not tell.
func unknownNote(answer string) string {
	return "Could not tell what PR #42 changed. Git answered: " + answer + "\n" +
		"No GPU step runs: guessing would cost hours of GPUs for a checkout detail. " +
		"Start a new build with WORKLOADS set to choose recipes (WORKLOADS=name,name or a recipe path), " +
		"or fix the checkout (BUILDKITE_GIT_CLONE_FLAGS, the base branch) and rebuild."
}
