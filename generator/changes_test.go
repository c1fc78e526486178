package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

const unicodeRecipe = "workloads/nouvelle recette ü.yaml"

// changesIn asks selection.PRChanges about the PR checkout at dir, with the profiles
// of its working tree, as the bootstrap step does.
func changesIn(t *testing.T, dir, baseBranch string) (*selection.Changes, *agents.Set) {
	t.Helper()
	agentsFile := filepath.Join(dir, "agents", "profiles.yaml")
	now, err := agents.LoadFile(agentsFile)
	if err != nil {
		t.Fatal(err)
	}
	return selection.PRChanges(context.Background(), selection.ExecGit(dir), dir, baseBranch, agentsFile, now), now
}

// rel turns selection.PRChanges paths back into paths inside the checkout.
func rel(t *testing.T, dir string, files []string) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		r, err := filepath.Rel(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(r))
	}
	slices.Sort(out)
	return out
}

func TestPRChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		change   func(t *testing.T, dir string)
		files    []string
		profiles []string
	}{
		{
			name: "a new recipe whose name has spaces and unicode",
			change: func(t *testing.T, dir string) {
				testutil.WriteFile(t, filepath.Join(dir, unicodeRecipe), recipeYAML("nouvelle-recette", "H200", "nightly: true"))
			},
			files: []string{unicodeRecipe},
		},
		{
			name: "a renamed recipe counts as added",
			change: func(t *testing.T, dir string) {
				gitRun(t, dir, "mv", "workloads/kimi_k2_5_mi300x.yaml", "workloads/kimi k2.5 (mi300x).yaml")
			},
			files: []string{"workloads/kimi k2.5 (mi300x).yaml"},
		},
		{
			name: "a deleted recipe is ignored",
			change: func(t *testing.T, dir string) {
				gitRun(t, dir, "rm", "--quiet", "workloads/kimi_k2_5_mi300x.yaml")
			},
		},
		{
			name: "a comment-only profile edit changes no GPU",
			change: func(t *testing.T, dir string) {
				replaceInFile(t, filepath.Join(dir, "agents/profiles.yaml"), "MI355X:\n", "# Reworded.\nMI355X:\n")
				appendFile(t, filepath.Join(dir, "agents/profiles.yaml"), "# trailing note\n")
			},
			files: []string{"agents/profiles.yaml"},
		},
		{
			name: "a real MI355X profile change",
			change: func(t *testing.T, dir string) {
				replaceInFile(t, filepath.Join(dir, "agents/profiles.yaml"), "queue: mi355_perf_eval\n", "queue: mi355x-new\n")
			},
			files:    []string{"agents/profiles.yaml"},
			profiles: []string{"MI355X"},
		},
		{
			name: "a new profile env var on B200 only",
			change: func(t *testing.T, dir string) {
				replaceInFile(t, filepath.Join(dir, "agents/profiles.yaml"), "    NCCL_CUMEM_HOST_ENABLE: 0\n", "    NCCL_CUMEM_HOST_ENABLE: 0\n    NCCL_DEBUG: WARN\n")
			},
			files:    []string{"agents/profiles.yaml"},
			profiles: []string{"B200"},
		},
		{
			name: "a recipe and code",
			change: func(t *testing.T, dir string) {
				appendFile(t, filepath.Join(dir, "workloads/gpt_oss_120b_h200.yaml"), "# touched\n")
				testutil.WriteFile(t, filepath.Join(dir, "runner/main.go"), "package main\n")
			},
			files: []string{"runner/main.go", "workloads/gpt_oss_120b_h200.yaml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := prRepo(t, tt.change)
			ch, _ := changesIn(t, dir, "main")
			if ch.Err != nil {
				t.Fatalf("selection.PRChanges() Err = %v", ch.Err)
			}
			if diff := cmp.Diff(tt.files, rel(t, dir, ch.Files)); diff != "" {
				t.Errorf("Files diff (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.profiles, ch.Profiles); diff != "" {
				t.Errorf("Profiles diff (-want +got):\n%s", diff)
			}
		})
	}
}

// selection.Selection over a real checkout: the PR's recipe paths and the catalog's
// paths meet, whatever characters the file names hold.
func TestPRChangesSelectRecipes(t *testing.T) {
	t.Parallel()
	dir := prRepo(t, func(t *testing.T, dir string) {
		testutil.WriteFile(t, filepath.Join(dir, unicodeRecipe), recipeYAML("nouvelle-recette", "H200", "nightly: false"))
		gitRun(t, dir, "mv", "workloads/gpt_oss_120b_b200.yaml", "workloads/gpt oss b200.yaml")
		replaceInFile(t, filepath.Join(dir, "agents/profiles.yaml"), "queue: mi300_perf_eval\n", "queue: mi300x-new\n")
	})
	ch, profiles := changesIn(t, dir, "main")
	cat, err := workloads.LoadDir(osFS{}, filepath.Join(dir, "workloads"), profiles)
	if err != nil {
		t.Fatal(err)
	}
	env := selection.BuildEnv{PullRequest: "42", BaseBranch: "main", Source: "webhook"}
	sel, err := selection.Select(cat, env, ch)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sel.Runs {
		got = append(got, r.Recipe.Name+": "+r.Why)
	}
	want := []string{
		"gpt_oss_120b-b200: changed in this PR",
		"kimi_k2_5-mi300x: its GPU profile (MI300X) changed in this PR",
		"nouvelle-recette: changed in this PR",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("runs diff (-want +got):\n%s", diff)
	}
}

// Only what the PR branch did counts, not what landed on the base branch
// since it forked; and a checkout that fetched only the PR branch fetches
// the base itself.
func TestPRChangesDiffsAgainstTheMergeBase(t *testing.T) {
	t.Parallel()
	dir := prRepo(t, func(t *testing.T, dir string) {
		appendFile(t, filepath.Join(dir, "workloads/gpt_oss_120b_h200.yaml"), "# from the PR\n")
	})
	gitRun(t, dir, "checkout", "--quiet", "main")
	appendFile(t, filepath.Join(dir, "workloads/kimi_k2_5_mi300x.yaml"), "# landed on main meanwhile\n")
	gitRun(t, dir, "commit", "--quiet", "-am", "main moves on")
	gitRun(t, dir, "push", "--quiet", "origin", "main")
	gitRun(t, dir, "checkout", "--quiet", "pr")
	gitRun(t, dir, "update-ref", "-d", "refs/remotes/origin/main")

	ch, _ := changesIn(t, dir, "main")
	if ch.Err != nil {
		t.Fatalf("selection.PRChanges() Err = %v", ch.Err)
	}
	if diff := cmp.Diff([]string{"workloads/gpt_oss_120b_h200.yaml"}, rel(t, dir, ch.Files)); diff != "" {
		t.Errorf("Files diff (-want +got):\n%s", diff)
	}
}

func TestPRChangesGitFailure(t *testing.T) {
	t.Parallel()
	touch := func(t *testing.T, dir string) {
		appendFile(t, filepath.Join(dir, "workloads/gpt_oss_120b_h200.yaml"), "# touched\n")
	}
	tests := []struct {
		name       string
		repo       func(t *testing.T) string
		baseBranch string
		reason     []string // the note must name all of these
	}{
		{
			name:       "the base branch does not exist",
			repo:       func(t *testing.T) string { return prRepo(t, touch) },
			baseBranch: "release-9",
			reason:     []string{"no merge base of HEAD and origin/release-9", "couldn't find remote ref refs/heads/release-9"},
		},
		{
			name: "the checkout has no origin",
			repo: func(t *testing.T) string {
				dir := prRepo(t, touch)
				gitRun(t, dir, "remote", "remove", "origin")
				return dir
			},
			baseBranch: "main",
			reason:     []string{"no merge base of HEAD and origin/main", "'origin' does not appear to be a git repository"},
		},
		{
			name:       "no base branch in the environment",
			repo:       func(t *testing.T) string { return prRepo(t, touch) },
			baseBranch: "",
			reason:     []string{"BUILDKITE_PULL_REQUEST_BASE_BRANCH is empty"},
		},
		{
			name:       "not a git repository",
			repo:       func(t *testing.T) string { return t.TempDir() },
			baseBranch: "main",
			reason:     []string{"no merge base of HEAD and origin/main", "not a git repository"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := tt.repo(t)
			now, err := agents.Default()
			if err != nil {
				t.Fatal(err)
			}
			ch := selection.PRChanges(context.Background(), selection.ExecGit(dir), dir, tt.baseBranch, "", now)
			if ch.Err == nil {
				t.Fatalf("selection.PRChanges() = %+v, want Err", ch)
			}
			if len(ch.Files) > 0 || len(ch.Profiles) > 0 {
				t.Errorf("selection.PRChanges() with Err also returned changes: %+v", ch)
			}

			cat, _ := testCatalog(t)
			sel, err := selection.Select(cat, selection.BuildEnv{PullRequest: "42", BaseBranch: tt.baseBranch}, ch)
			if err != nil {
				t.Fatal(err)
			}
			if got := project(sel).Runs; len(got) != 0 {
				t.Errorf("runs = %q, want none: a PR whose changes are unknown runs no GPU step", got)
			}
			if len(sel.Notes) != 1 || sel.Notes[0] != sel.Unknown {
				t.Fatalf("notes = %q, want one, the reason %q", sel.Notes, sel.Unknown)
			}
			note := sel.Notes[0]
			if !strings.HasPrefix(note, "Could not tell what PR #42 changed. Git answered: ") || !strings.Contains(note, "WORKLOADS=") {
				t.Errorf("note = %q", note)
			}
			for _, r := range tt.reason {
				if !strings.Contains(note, r) {
					t.Errorf("note does not name %q: %q", r, note)
				}
			}
		})
	}
}

// A PR build whose git cannot answer runs no GPU step: one failing CPU
// step says what git answered and how to choose recipes.
func TestPipelinePRGitFailureRunsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.md")
	env := map[string]string{"BUILDKITE_PULL_REQUEST": "42", "BUILDKITE_PULL_REQUEST_BASE_BRANCH": "main", "BUILDKITE_SOURCE": "webhook", "BUILDKITE_AGENT_META_DATA_QUEUE": "cpu"}
	got := runGenerator(t, env, "--workloads", "../testdata/workloads", "--agents", "../agents/profiles.yaml", "--repo", dir, "--notes", notes)
	if got.code != 0 {
		t.Fatalf("generator = exit %d\nstderr:\n%s", got.code, got.stderr)
	}
	var p struct {
		Steps []struct {
			Key      string            `json:"key"`
			Commands []string          `json:"commands"`
			Env      map[string]string `json:"env"`
			Agents   map[string]string `json:"agents"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &p); err != nil {
		t.Fatalf("pipeline: %v\n%s", err, got.stdout)
	}
	if len(p.Steps) != 1 {
		t.Fatalf("pipeline has %d steps, want the one failing step:\n%s", len(p.Steps), got.stdout)
	}
	s := p.Steps[0]
	if s.Key != "pr-changes-unknown" || s.Agents["queue"] != "cpu" || s.Commands[len(s.Commands)-1] != "exit 1" {
		t.Errorf("step = %+v, want a failing CPU step", s)
	}
	for _, want := range []string{"Git answered: no merge base of HEAD and origin/main", "not a git repository", "WORKLOADS="} {
		if !strings.Contains(s.Env["BENCHKITE_PROBLEMS"], want) {
			t.Errorf("step's message lacks %q: %q", want, s.Env["BENCHKITE_PROBLEMS"])
		}
	}
	b, err := os.ReadFile(notes)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "Could not tell what PR #42 changed. Git answered: no merge base of HEAD and origin/main") {
		t.Errorf("notes do not give the reason:\n%s", b)
	}
}

// A depth-1 clone of a PR of three commits, which holds neither the merge
// base nor the base branch: the history is deepened until the merge base
// shows, and exactly the recipe the PR touched runs.
func TestPRChangesDepthOneClone(t *testing.T) {
	t.Parallel()
	src := prRepo(t, func(t *testing.T, dir string) {
		appendFile(t, filepath.Join(dir, "workloads/kimi_k2_5_mi300x.yaml"), "# one\n")
	})
	for i, f := range []string{"runner/one.go", "runner/two.go"} {
		testutil.WriteFile(t, filepath.Join(src, f), "package main\n")
		gitRun(t, src, "add", f)
		gitRun(t, src, "commit", "--quiet", "-m", fmt.Sprintf("commit %d", i+2))
	}
	// main moves on after the fork, so the merge base is not main's tip.
	gitRun(t, src, "checkout", "--quiet", "main")
	appendFile(t, filepath.Join(src, "workloads/gpt_oss_120b_h200.yaml"), "# main moves on\n")
	gitRun(t, src, "commit", "--quiet", "-am", "main moves on")
	gitRun(t, src, "checkout", "--quiet", "pr")
	if n := strings.TrimSpace(gitRun(t, src, "rev-list", "--count", "main..pr")); n != "3" {
		t.Fatalf("the PR has %s commits, want 3", n)
	}

	clone := filepath.Join(t.TempDir(), "clone")
	gitRun(t, filepath.Dir(clone), "clone", "--quiet", "--depth", "1", "--branch", "pr", "file://"+src, clone)
	if got := strings.TrimSpace(gitRun(t, clone, "rev-parse", "--is-shallow-repository")); got != "true" {
		t.Fatalf("clone is shallow = %s", got)
	}
	ch, profiles := changesIn(t, clone, "main")
	if ch.Err != nil {
		t.Fatalf("selection.PRChanges() Err = %v", ch.Err)
	}
	if len(ch.Fetches) == 0 {
		t.Errorf("Fetches = none; a depth-1 clone cannot hold the merge base")
	}
	cat, err := workloads.LoadDir(osFS{}, filepath.Join(clone, "workloads"), profiles)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := selection.Select(cat, selection.BuildEnv{PullRequest: "42", BaseBranch: "main", Source: "webhook"}, ch)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range sel.Runs {
		got = append(got, r.Recipe.Name)
	}
	if diff := cmp.Diff(got, []string{"kimi_k2_5-mi300x"}); diff != "" {
		t.Errorf("runs diff (-got +want):\n%s", diff)
	}
}
