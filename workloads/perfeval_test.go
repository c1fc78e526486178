package workloads

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPerfEvalRecipesLoad loads recipes perf-eval runs that an older
// loader refused: each loads, with a warning wherever the loader adjusted
// something.
func TestPerfEvalRecipesLoad(t *testing.T) {
	t.Parallel()
	c, err := LoadDir(os.DirFS("testdata"), "perfeval", defaultProfiles(t))
	if err != nil {
		t.Fatal(err)
	}
	for path, ps := range c.Invalid {
		t.Errorf("%s does not load:\n%v", path, ps)
	}
	speed := "is ignored: speed_bench is not used (it needs --skip-tokenizer-init, which caps every request at one output token); remove the field"
	wantWarnings := []string{
		"perfeval/kimi_k2_5_mi300x.yaml:9:22: warning: vllm.startup_timeout_s: the server's start-up wait (vllm.startup_timeout_s 7200 s, default 3600) does not fit in the step's timeout (the default, 120 min) with 5 min to spare; the step's timeout is raised to 180 min (the wait plus 60 min for the work); set timeout_in_minutes to choose",
		"perfeval/kimi_k2_5_mi300x.yaml:41:7: warning: speed_bench_dataset_subset " + speed,
		"perfeval/kimi_k2_5_mi300x.yaml:42:7: warning: speed_bench_category " + speed,
		"perfeval/kimi_k3_b300.yaml:11:3: warning: vllm.startup_timeout is the older spelling of vllm.startup_timeout_s (seconds); rename it",
	}
	if diff := cmp.Diff(problemList(c.Warnings), wantWarnings); diff != "" {
		t.Errorf("warnings diff (-got +want):\n%s", diff)
	}
	type facts struct {
		Step, StartupS int
		Backends       []string
	}
	got := map[string]facts{}
	for _, r := range c.Recipes {
		f := facts{Step: r.StepTimeout(), StartupS: int(r.StartupTimeout().Seconds())}
		for _, bc := range r.Bench.Configs {
			f.Backends = append(f.Backends, bc.Backend)
		}
		got[r.Path] = f
	}
	rep := func(s string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	want := map[string]facts{
		"perfeval/kimi_k2_5_mi300x.yaml":                 {Step: 180, StartupS: 7200, Backends: []string{"openai"}},
		"perfeval/upstream_deepseek_r1_0528_mi355x.yaml": {Step: 120, StartupS: 3600, Backends: rep("openai", 10)},
		"perfeval/kimi_k3_b300.yaml":                     {Step: 120, StartupS: 3600, Backends: []string{"openai"}},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("recipes diff (-got +want):\n%s", diff)
	}
}
