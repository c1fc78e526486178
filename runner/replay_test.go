package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

func TestPlanReplay(t *testing.T) {
	t.Parallel()
	built := func(dirty bool, commit string) summary.Provenance {
		return summary.Provenance{SchemaVersion: 1, Recipe: summary.ProvenanceRecipe{Copy: "recipe.yaml"}, Image: summary.ProvenanceImage{Ref: "vllm-local:x"},
			Build: &summary.ProvenanceBuild{Dockerfile: "does/not/exist", Commit: commit, Dirty: dirty,
				Args: []summary.ProvenanceVar{{Name: "GIT_TOKEN", Redacted: true, FromEnv: true}, {Name: "HF_KEY", Redacted: true}}}}
	}
	head := func() (string, error) { return "abc", nil }
	tests := []struct {
		name      string
		p         summary.Provenance
		env       map[string]string
		headErr   bool
		wantImage string
		wantWarn  []string
		wantErr   string
	}{
		{name: "by digest", p: summary.Provenance{Image: summary.ProvenanceImage{Ref: "r:t", RepoDigests: []string{"r@sha256:1"}}, Recipe: summary.ProvenanceRecipe{Copy: "recipe.yaml"}},
			wantImage: "r@sha256:1"},
		{name: "no digest recorded", p: summary.Provenance{Image: summary.ProvenanceImage{Ref: "r:t"}, Recipe: summary.ProvenanceRecipe{Copy: "recipe.yaml"}},
			wantImage: "r:t", wantWarn: []string{"no digest of r:t was recorded: the tag may name another image now"}},
		{name: "native, in a pod of the run's image", p: summary.Provenance{Runtime: "native", Image: summary.ProvenanceImage{Ref: "r@sha256:1", RepoDigests: []string{"r@sha256:1"}}, Recipe: summary.ProvenanceRecipe{Copy: "recipe.yaml"}},
			env: map[string]string{"VLLM_IMAGE": "r@sha256:1"}},
		{name: "native, in another pod", p: summary.Provenance{Runtime: "native", Image: summary.ProvenanceImage{Ref: "r@sha256:1", RepoDigests: []string{"r@sha256:1"}}, Recipe: summary.ProvenanceRecipe{Copy: "recipe.yaml"}},
			env:      map[string]string{"VLLM_IMAGE": "r:latest"},
			wantWarn: []string{"the run was native, on its pod's image r@sha256:1; the replay runs on this pod's (r:latest), which it cannot change: run it in a pod of r@sha256:1 to reproduce the run"}},
		{name: "a redacted arg from the environment is missing", p: built(false, "abc"),
			wantErr: "build argument(s) GIT_TOKEN were redacted from the manifest and are not set"},
		{name: "dirty tree", p: built(true, "abc"), env: map[string]string{"GIT_TOKEN": "t"},
			wantWarn: []string{"the source tree was dirty when vllm-local:x was built: changes not in commit abc are not in the rebuild"}},
		{name: "another commit", p: built(false, "def"), env: map[string]string{"GIT_TOKEN": "t"},
			wantErr: "but the checkout is at abc: git checkout def first"},
		{name: "no git", p: built(false, "abc"), env: map[string]string{"GIT_TOKEN": "t"}, headErr: true,
			wantErr: "read the checkout's commit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := head
			if tt.headErr {
				h = func() (string, error) { return "", errors.New("not a git repository") }
			}
			rp, err := planReplay("m/manifest.json", tt.p, func(k string) string { return tt.env[k] }, h)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("planReplay() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rp.image != tt.wantImage || rp.recipe != "m/recipe.yaml" {
				t.Errorf("planReplay() = image %q recipe %q, want %q and m/recipe.yaml", rp.image, rp.recipe, tt.wantImage)
			}
			if diff := cmp.Diff(rp.warnings, tt.wantWarn); diff != "" {
				t.Errorf("warnings diff (-got +want):\n%s", diff)
			}
		})
	}
}
