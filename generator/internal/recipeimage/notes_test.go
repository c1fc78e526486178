package recipeimage

import (
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// TestImageNotes: a CUDA VLLM_IMAGE whose tag names a commit reaches the
// NVIDIA recipe only; the AMD and XPU recipes keep their own images and
// the notes say why, per recipe.
func TestImageNotes(t *testing.T) {
	t.Parallel()
	profiles, err := agents.Default()
	if err != nil {
		t.Fatal(err)
	}
	var sel selection.Selection
	for _, gpu := range []string{"H200", "MI355X", "XPU"} {
		src := "name: r-" + gpu + "\ngpu: " + gpu + "\nnum_gpus: 1\nvllm: {model: o/m}\nvllm_bench:\n  configs: [{name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}]\n"
		r, ps := workloads.Parse(gpu+".yaml", []byte(src), profiles)
		if r == nil {
			t.Fatal(ps)
		}
		sel.Runs = append(sel.Runs, selection.Selected{Recipe: r})
	}
	env := map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:v0.11.0-1a2b3c4d"}
	got := SourceNotes(&sel, profiles, func(k string) string { return env[k] })
	want := []string{
		"Image of r-H200 (H200, CUDA): vllm/vllm-openai:v0.11.0-1a2b3c4d, from VLLM_IMAGE",
		"Image of r-MI355X (MI355X, ROCm): vllm/vllm-openai-rocm:nightly, from default; VLLM_IMAGE=vllm/vllm-openai:v0.11.0-1a2b3c4d ignored: it is a CUDA image and MI355X needs ROCm; the commit its tag names (1a2b3c4d) selects no ROCm image",
		"Image of r-XPU (XPU, XPU): vllm/vllm-openai-xpu:nightly, from default; VLLM_IMAGE=vllm/vllm-openai:v0.11.0-1a2b3c4d ignored: it is a CUDA image and XPU needs XPU; the commit its tag names (1a2b3c4d) selects no XPU image",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("SourceNotes() diff (-got +want):\n%s", diff)
	}
	if got := SourceNotes(&sel, profiles, func(string) string { return "" }); got != nil {
		t.Errorf("SourceNotes() without VLLM_IMAGE = %q, want none", got)
	}
}
