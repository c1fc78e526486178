package workloads

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/testutil"
)

// perfEvalDir returns the perf-eval reference recipes in ../shared.
func perfEvalDir(t *testing.T) string {
	t.Helper()
	return testutil.ReferenceDir(t, "perf-eval")
}

// loadReference loads one reference recipe directory and fails on any error,
// naming every file and problem.
func loadReference(t *testing.T, root string, profiles *agents.Set) *Catalog {
	t.Helper()
	fsys := os.DirFS(root)
	files, err := RecipeFiles(fsys, "workloads")
	if err != nil {
		t.Fatalf("RecipeFiles(%s) error = %v", root, err)
	}
	if len(files) == 0 {
		t.Fatalf("no reference recipes in %s/workloads", root)
	}
	c, err := LoadDir(fsys, "workloads", profiles)
	if err != nil {
		t.Fatalf("LoadDir(%s) error = %v", root, err)
	}
	for path, ps := range c.Invalid {
		t.Errorf("reference recipe %s does not load:\n%v", path, ps)
	}
	if len(c.Recipes) != len(files) {
		t.Errorf("loaded %d valid recipes from %d files", len(c.Recipes), len(files))
	}
	for _, w := range c.Warnings {
		if !strings.Contains(w.Msg, "speed_bench_") {
			t.Errorf("unexpected warning %v; only the deprecated speed_bench_* fields may warn", w)
		}
	}
	return c
}

func TestReferenceRecipesLoad(t *testing.T) {
	t.Parallel()
	ref := perfEvalDir(t)
	profiles := defaultProfiles(t)
	for _, root := range []string{ref, filepath.Join(ref, "seed-pr")} {
		loadReference(t, root, profiles)
	}
}

func TestReferenceSpeedBenchFieldsWarn(t *testing.T) {
	t.Parallel()
	c := loadReference(t, perfEvalDir(t), defaultProfiles(t))
	var got []string
	for _, w := range c.Warnings {
		if w.File == "workloads/deepseek_v4_pro_mi355x.yaml" {
			got = append(got, w.Error())
		}
	}
	want := []string{
		"workloads/deepseek_v4_pro_mi355x.yaml:42:7: warning: speed_bench_dataset_subset is ignored: speed_bench is not used (it needs --skip-tokenizer-init, which caps every request at one output token); remove the field",
		"workloads/deepseek_v4_pro_mi355x.yaml:43:7: warning: speed_bench_category is ignored: speed_bench is not used (it needs --skip-tokenizer-init, which caps every request at one output token); remove the field",
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("warnings diff (-got +want):\n%s", diff)
	}
}

func TestReferenceRecipeValues(t *testing.T) {
	t.Parallel()
	ref := perfEvalDir(t)
	profiles := defaultProfiles(t)
	main := loadReference(t, ref, profiles)
	seed := loadReference(t, filepath.Join(ref, "seed-pr"), profiles)
	recipe := func(c *Catalog, name string) *Recipe {
		t.Helper()
		r, ok := byName(c, name)
		if !ok {
			t.Fatalf("reference recipe %q not found", name)
		}
		return r
	}

	t.Run("unquoted JSON stays one argv entry", func(t *testing.T) {
		r := recipe(main, "deepseek_v4_pro-h200")
		args := r.VLLM.ServeArgs
		i := indexOf(args, "--compilation-config")
		if i < 0 || i+1 >= len(args) {
			t.Fatalf("serve argv %q has no --compilation-config value", args)
		}
		if got, want := args[i+1], `{"mode":0,"cudagraph_mode":"FULL_DECODE_ONLY"}`; got != want {
			t.Errorf("--compilation-config value = %q, want %q", got, want)
		}
		if i+2 != len(args) {
			t.Errorf("--compilation-config is followed by %q, want the end of argv", args[i+2:])
		}
		if got := [3]int{r.VLLM.Serve.TP, r.VLLM.Serve.DP, r.VLLM.Serve.PP}; got != [3]int{1, 8, 1} {
			t.Errorf("TP, DP, PP = %v, want [1 8 1]", got)
		}
	})

	t.Run("sweep expands per concurrency", func(t *testing.T) {
		r := recipe(main, "qwen3_5-mi355x")
		var got []BenchRun
		for _, run := range ExpandBench(r.Bench) {
			got = append(got, BenchRun{Name: run.Name, NumPrompts: run.NumPrompts, Concurrency: run.Concurrency})
		}
		want := []BenchRun{
			{Name: "8k-in-1k-out-conc-1", NumPrompts: 10, Concurrency: 1},
			{Name: "8k-in-1k-out-conc-128", NumPrompts: 512, Concurrency: 128},
		}
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("ExpandBench() diff (-got +want):\n%s", diff)
		}
	})

	t.Run("dotted speculative flags with underscores", func(t *testing.T) {
		r := recipe(main, "deepseek_v4_flash-b200")
		want := ServeInfo{
			TP: 2, DP: 4, PP: 1,
			TrustRemoteCode: true,
			ServedModelName: "deepseek-ai/DeepSeek-V4-Flash",
			Speculative:     &Speculative{Method: "mtp", NumTokens: 2},
			KVCacheDType:    "fp8",
			ExpertParallel:  true,
		}
		if diff := cmp.Diff(r.VLLM.Serve, want); diff != "" {
			t.Errorf("ServeInfo diff (-got +want):\n%s", diff)
		}
		if r.BFCL == nil || len(r.BFCL.TestCategories) != 5 || r.BFCL.NumThreads != 8 {
			t.Errorf("BFCL = %+v, want 5 categories on 8 threads", r.BFCL)
		}
	})

	t.Run("speculative flags with spaces", func(t *testing.T) {
		r := recipe(main, "glm_5_1-h200")
		if diff := cmp.Diff(r.VLLM.Serve.Speculative, &Speculative{Method: "mtp", NumTokens: 3}); diff != "" {
			t.Errorf("Speculative diff (-got +want):\n%s", diff)
		}
		if r.TimeoutInMinutes != 180 {
			t.Errorf("TimeoutInMinutes = %d, want 180", r.TimeoutInMinutes)
		}
	})

	t.Run("EAGLE3 drafter of the seed", func(t *testing.T) {
		r := recipe(seed, "minimax_m3-mi355x")
		want := &Speculative{Method: "eagle3", Model: "Inferact/MiniMax-M3-EAGLE3", NumTokens: 3}
		if diff := cmp.Diff(r.VLLM.Serve.Speculative, want); diff != "" {
			t.Errorf("Speculative diff (-got +want):\n%s", diff)
		}
		if diff := cmp.Diff(r.VLLM.Env, []EnvVar{{"VLLM_USE_BREAKABLE_CUDAGRAPH", "0"}}); diff != "" {
			t.Errorf("Env diff (-got +want):\n%s", diff)
		}
		wantArgs := []Arg{{"tokenized_requests", "False"}, {"tokenizer_backend", "None"}, {"timeout", "6000"}}
		if diff := cmp.Diff(r.LMEval.ModelArgs, wantArgs); diff != "" {
			t.Errorf("lm_eval model_args diff (-got +want):\n%s", diff)
		}
	})

	t.Run("image, kv dtype with =, bench args", func(t *testing.T) {
		if got := recipe(main, "minimax_m3-b200").VLLM.Image; got != "vllm/vllm-openai:minimax-m3" {
			t.Errorf("minimax_m3-b200 image = %q", got)
		}
		if got := recipe(main, "gpt_oss_120b-mi355x").VLLM.Serve.KVCacheDType; got != "fp8" {
			t.Errorf("gpt_oss_120b-mi355x KV cache dtype = %q, want fp8 from --kv-cache-dtype=fp8", got)
		}
		c := recipe(main, "gpt_oss_120b-h200").Bench.Configs[0]
		if diff := cmp.Diff(c.Args, []BenchArg{{Flag: "--num-warmups", Values: []string{"128"}}}); diff != "" {
			t.Errorf("bench args diff (-got +want):\n%s", diff)
		}
		if c.Repetitions != 3 || c.Dataset != "random" || c.Backend != "openai" {
			t.Errorf("bench config = %+v, want 3 repetitions of random on openai", c)
		}
	})

	t.Run("gpu names resolve to profiles", func(t *testing.T) {
		for _, r := range main.Recipes {
			if _, err := Resolve(r, profiles, mapEnv(nil)); err != nil {
				t.Errorf("Resolve(%s) error = %v", r.Name, err)
			}
		}
	})
}

func TestShippedRecipes(t *testing.T) {
	t.Parallel()
	c, err := LoadDir(os.DirFS(".."), DefaultDir, defaultProfiles(t))
	if err != nil {
		t.Fatalf("LoadDir(../%s) error = %v", DefaultDir, err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("shipped recipes do not load:\n%v", err)
	}
	if len(c.Warnings) > 0 {
		t.Errorf("shipped recipes warn:\n%v", c.Warnings)
	}
	files, err := RecipeFiles(os.DirFS("."), ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Recipes) != len(files) {
		t.Errorf("embedded catalog has %d recipes, the directory %d files", len(c.Recipes), len(files))
	}
	spec, ok := byName(c, "minimax_m3-mi355x")
	if !ok {
		t.Fatal("shipped EAGLE3 recipe minimax_m3-mi355x not found")
	}
	e := spec.LMEval.Tasks[0].Expect
	if len(e) != 1 || e[0].BaselineFrom != "minimax_m3-nospec-mi355x" || e[0].Tolerance != 0.015 {
		t.Errorf("EAGLE3 gsm8k expectation = %+v, want the no-spec recipe's score within 0.015", e)
	}
	if diff := cmp.Diff(spec.BlockedBy, []string{"vllm-project/vllm#45381"}); diff != "" {
		t.Errorf("BlockedBy diff (-got +want):\n%s", diff)
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// mapEnv adapts a map to agents.Env.
func mapEnv(m map[string]string) agents.Env { return func(k string) string { return m[k] } }

// byName finds a valid recipe by name.
func byName(c *Catalog, name string) (*Recipe, bool) {
	for _, r := range c.Recipes {
		if r.Name == name {
			return r, true
		}
	}
	return nil, false
}
