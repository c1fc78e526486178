package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/generator/internal/explain"
	"github.com/google/go-cmp/cmp"
)

var shippedFlags = []string{"--workloads", "../testdata/workloads", "--agents", "../agents/profiles.yaml"}

const testCommit = "0123456789abcdef0123456789abcdef01234567"

// explainCases are the recipes a person checks before a PR, each in a build
// environment that moves one decision.
var explainCases = []struct {
	golden string
	recipe string
	env    map[string]string
	// flags replace shippedFlags, to explain a recipe of testdata.
	flags []string
	// text is what the text form must say, checked apart from the golden
	// file so that -update cannot accept a wrong decision.
	text []string
}{
	{
		golden: "seed-default",
		recipe: "minimax_m3-mi355x",
		text: []string{
			"queue        mi355_perf_eval (from profile)",
			"image        vllm/vllm-openai-rocm:nightly (from default)",
			"blocked by   vllm-project/vllm#45381",
			"speculative  eagle3, drafter Inferact/MiniMax-M3-EAGLE3, 3 tokens",
			"  vllm serve MiniMaxAI/MiniMax-M3-MXFP8 --port 8000 --tensor-parallel-size 8 --block-size 128 ",
			"  VLLM_USE_BREAKABLE_CUDAGRAPH=0\n",
			">= the latest passing nightly of minimax_m3-nospec-mi355x - 0.015",
		},
	},
	{
		// A CUDA image cannot serve on ROCm: the AMD recipe keeps its own
		// image and says why; the queue comes from the override.
		golden: "seed-cuda-image-canary-queue",
		recipe: "minimax_m3-mi355x",
		env:    map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:nightly-" + testCommit, "MI355X_QUEUE": "mi355x-canary"},
		text: []string{
			"queue        mi355x-canary (from MI355X_QUEUE)",
			"image        vllm/vllm-openai-rocm:nightly (from default)\n" +
				"             VLLM_IMAGE=vllm/vllm-openai:nightly-" + testCommit + " ignored: it is a CUDA image and MI355X needs ROCm; the commit its tag names (" + testCommit + ") selects no ROCm image\n",
			"vllm commit  unknown (image tag names no commit)",
		},
	},
	{
		// VLLM_COMMIT still applies when VLLM_IMAGE was ignored.
		golden: "seed-cuda-image-and-commit",
		recipe: "minimax_m3-mi355x",
		env:    map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:latest", "VLLM_COMMIT": testCommit},
		text: []string{
			"image        vllm/vllm-openai-rocm:nightly-" + testCommit + " (from VLLM_COMMIT)\n" +
				"             VLLM_IMAGE=vllm/vllm-openai:latest ignored: it is a CUDA image and MI355X needs ROCm\n",
			"vllm commit  " + testCommit,
		},
	},
	{
		golden: "seed-rocm-image",
		recipe: "minimax_m3-mi355x",
		env:    map[string]string{"VLLM_IMAGE": "rocm/vllm-dev:nightly-abcdef1", "VLLM_COMMIT": testCommit},
		text: []string{
			"image        rocm/vllm-dev:nightly-abcdef1 (from VLLM_IMAGE)\n",
			"vllm commit  abcdef1",
		},
	},
	{
		golden: "h200-docker-commit",
		recipe: "gpt_oss_120b-h200",
		env:    map[string]string{"VLLM_COMMIT": testCommit, "MI355X_QUEUE": "not-for-h200"},
		text: []string{
			"runtime      docker",
			"queue        H200 (from profile)",
			"image        vllm/vllm-openai:nightly-" + testCommit + " (from VLLM_COMMIT)",
			"  HF_HOME=/mnt/shared/hf-models\n",
			"  8k-in-1k-out  openai   8192  1024  512      128   3     --num-warmups 128\n",
			"gate       exact_match,flexible-extract >= 0.8",
		},
	},
	{
		golden: "bfcl-gates",
		recipe: "gpt_oss_120b-bfcl-h200",
		flags:  []string{"--workloads", "testdata/bfcl/workloads", "--agents", "../agents/profiles.yaml"},
		text: []string{
			"bfcl categories (bfcl-eval 2026.3.23; env BFCL_MAXIMUM_STEP_LIMIT and BFCL_MAX_TEST_CASES override)\n",
			"  simple_python\n    settings   8 threads, temperature 0, step limit 12, every test entry\n    gate       bfcl_simple_python acc >= 0.9\n",
			"  multi_turn (multi_turn_base, multi_turn_long_context, multi_turn_miss_func, multi_turn_miss_param)\n" +
				"    settings   8 threads, temperature 0, step limit 12, first 240 test entries split over 4 sub-categories, partial evaluation\n" +
				"    gate       bfcl_multi_turn acc >= 0.4 (baseline 0.45 - 0.05)\n" +
				"    gate       bfcl_multi_turn_base acc >= the latest passing nightly of gpt_oss_120b-bfcl-h200-ref - 0.03\n",
		},
	},
	{
		golden: "b200-sweep",
		recipe: "gpt_oss_120b-b200",
		env:    map[string]string{"B200_QUEUE": "b200-canary"},
		text: []string{
			"queue        b200-canary (from B200_QUEUE)",
			"  1k-in-1k-out-conc-8    openai   1024  1024  64       8     1     -\n",
			"  1k-in-1k-out-conc-128  openai   1024  1024  512      128   1     -\n",
			"  VLLM_DEEP_GEMM_WARMUP=skip\n  NCCL_CUMEM_HOST_ENABLE=0\n  VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1\n",
		},
	},
	{
		// XPU: agent tags, the recipe's start-up time, a built image (no
		// registry, no VLLM_IMAGE), aiperf with its gates.
		golden: "xpu-build-aiperf",
		recipe: "llama-xpu-built",
		flags:  []string{"--workloads", "testdata/parity/workloads", "--agents", "../agents/profiles.yaml"},
		text: []string{
			"runtime      docker\n",
			"image        vllm-local:xpu-pr (from build)\n             built on the host from docker/Dockerfile.xpu\n",
			"startup      2400 s (health wait and VLLM_ENGINE_READY_TIMEOUT_S)\n",
			"agent tags   gpu=1+ label=performance mem=32+ queue=intel-gpu\n",
			"build        docker build -f docker/Dockerfile.xpu .; args MAX_JOBS=8, GIT_TOKEN (from the job's environment)\n",
			"  prefix\n    args  --endpoint-type chat --streaming --sweep-type zip --concurrency 16,24 --request-count 80,120\n",
			"    gate  request_throughput >= 1\n",
			"    gate  output_token_throughput flagged when over 5% worse and beyond the noise of the last 30 comparable nights\n",
		},
	},
	{
		// A start-up judged against past nights (vllm.startup_regression).
		golden: "startup-gates",
		recipe: "tiny_startup-h200",
		flags:  []string{"--workloads", "testdata/startup/workloads", "--agents", "../agents/profiles.yaml"},
		text: []string{
			"startup gate  startup: ready_s flagged when over 25% longer and beyond the noise of the last 10 comparable nights (lower is better; judged from 5 nights)\n",
			"startup gate  startup: torch_compile_s flagged when over 50% longer",
		},
	},
}

func TestExplainGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range explainCases {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			flags := shippedFlags
			if tc.flags != nil {
				flags = tc.flags
			}
			text := runGenerator(t, tc.env, append(append([]string{"explain"}, flags...), tc.recipe)...)
			if text.code != 0 || text.stderr != "" {
				t.Fatalf("explain %s = exit %d, stderr %q", tc.recipe, text.code, text.stderr)
			}
			checkGolden(t, filepath.Join("testdata", "explain", tc.golden+".txt"), []byte(text.stdout))
			for _, want := range tc.text {
				if !strings.Contains(text.stdout, want) {
					t.Errorf("explain %s does not say %q:\n%s", tc.recipe, want, text.stdout)
				}
			}

			js := runGenerator(t, tc.env, append(append([]string{"explain", "--json"}, flags...), tc.recipe)...)
			if js.code != 0 || js.stderr != "" {
				t.Fatalf("explain --json %s = exit %d, stderr %q", tc.recipe, js.code, js.stderr)
			}
			checkGolden(t, filepath.Join("testdata", "explain", tc.golden+".json"), []byte(js.stdout))

			// The two forms tell the same story.
			var ex explain.Explanation
			dec := json.NewDecoder(strings.NewReader(js.stdout))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&ex); err != nil {
				t.Fatalf("explain --json output does not decode: %v", err)
			}
			var again strings.Builder
			if err := ex.WriteText(&again); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(text.stdout, again.String()); diff != "" {
				t.Errorf("text from the JSON form differs from the text form (-text +from json):\n%s", diff)
			}
		})
	}
}

func TestExplainJSONHasEveryDecision(t *testing.T) {
	t.Parallel()
	env := map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:latest", "VLLM_COMMIT": testCommit, "MI355X_QUEUE": "mi355x-canary"}
	got := runGenerator(t, env, append(append([]string{"explain", "--json"}, shippedFlags...), "minimax_m3-mi355x")...)
	var ex map[string]any
	if err := json.Unmarshal([]byte(got.stdout), &ex); err != nil {
		t.Fatalf("explain --json: %v\nstdout:\n%s\nstderr:\n%s", err, got.stdout, got.stderr)
	}
	want := map[string]any{
		"device":           "mi355x",
		"tp":               8.0,
		"precision":        "mxfp8",
		"precision_source": "the model name",
		"queue":            "mi355x-canary",
		"queue_source":     "MI355X_QUEUE",
		"image":            "vllm/vllm-openai-rocm:nightly-" + testCommit,
		"image_source":     "VLLM_COMMIT",
		"image_note":       "VLLM_IMAGE=vllm/vllm-openai:latest ignored: it is a CUDA image and MI355X needs ROCm",
		"vllm_commit":      testCommit,
	}
	for k, v := range want {
		if diff := cmp.Diff(v, ex[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
}

func TestExplainFindsARecipeEveryWay(t *testing.T) {
	t.Parallel()
	want := runGenerator(t, nil, append(append([]string{"explain"}, shippedFlags...), "gpt_oss_120b-b200")...)
	if want.code != 0 {
		t.Fatalf("explain by name: exit %d: %s", want.code, want.stderr)
	}
	for _, args := range [][]string{
		append(append([]string{"explain"}, shippedFlags...), "../testdata/workloads/gpt_oss_120b_b200.yaml"), // path
		append(append([]string{"explain"}, shippedFlags...), "./../testdata/workloads/gpt_oss_120b_b200.yaml"),
		append(append([]string{"explain"}, shippedFlags...), "gpt_oss_120b_b200.yaml"), // file name
		append(append([]string{"explain"}, shippedFlags...), "gpt_oss_120b_b200"),      // stem
		append([]string{"explain", "gpt_oss_120b-b200"}, shippedFlags...),              // flags after the name
	} {
		if got := runGenerator(t, nil, args...); got != want {
			t.Errorf("%q = %+v\nwant the same as by name: %+v", args, got, want)
		}
	}

	env := map[string]string{"BENCHKITE_WORKLOADS": "../testdata/workloads", "BENCHKITE_AGENTS": "../agents/profiles.yaml"}
	if got := runGenerator(t, env, "explain", "gpt_oss_120b-b200"); got != want {
		t.Errorf("explain with BENCHKITE_WORKLOADS = %+v\nwant the same as with --workloads: %+v", got, want)
	}
}

func TestExplainUnknownRecipe(t *testing.T) {
	t.Parallel()
	got := runGenerator(t, nil, append(append([]string{"explain"}, shippedFlags...), "gpt_oss_120b-b300")...)
	want := result{
		code:   1,
		stderr: `generator explain: no recipe "gpt_oss_120b-b300" in ../testdata/workloads (close: gpt_oss_120b-b200, gpt_oss_120b-h200)` + "\n",
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("explain of an unknown recipe (-want +got):\n%s", diff)
	}
}

func TestExplainInvalidRecipe(t *testing.T) {
	t.Parallel()
	dir := "testdata/invalid/workloads"
	lint := runGenerator(t, nil, "lint", "--workloads", dir, "--agents", profilesFlag)
	if lint.code != 1 || lint.stdout == "" {
		t.Fatalf("lint %s = %+v, want problems", dir, lint)
	}
	for _, name := range []string{"hostile $(touch pwned)", "hostile $(touch pwned).yaml", dir + "/hostile $(touch pwned).yaml"} {
		got := runGenerator(t, nil, "explain", "--workloads", dir, "--agents", profilesFlag, name)
		want := result{
			code:   1,
			stderr: "generator explain: " + dir + "/hostile $(touch pwned).yaml is invalid:\n" + lint.stdout,
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(result{})); diff != "" {
			t.Errorf("explain %q (-want +got):\n%s", name, diff)
		}
	}
	// An invalid file has no name, so an empty one must not find it.
	if got := runGenerator(t, nil, "explain", "--workloads", dir, "--agents", profilesFlag, ""); got.code != 1 || !strings.Contains(got.stderr, `no recipe "" in `) {
		t.Errorf(`explain "" = %+v, want "no recipe"`, got)
	}
	// The valid recipe beside it still explains.
	if got := runGenerator(t, nil, "explain", "--workloads", dir, "--agents", profilesFlag, "ok-h200"); got.code != 0 {
		t.Errorf("explain ok-h200 = %+v, want exit 0", got)
	}
}
