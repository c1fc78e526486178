package workloads

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lintHead is a valid recipe up to what it measures.
const lintHead = "name: ok\ngpu: MI355X\nnum_gpus: 8\nvllm: {model: org/m}\n"

// lmEvalTail makes a recipe of lintHead complete.
const lmEvalTail = "lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}\n"

// serveArgs is a valid recipe with the given serve_args.
func serveArgs(args string) string {
	return "name: ok\ngpu: MI355X\nnum_gpus: 8\nvllm:\n  model: org/m\n  serve_args: >-\n    " + args + "\n" + lmEvalTail
}

// TestLintRules holds one probe per lint rule: each src is a recipe a
// careless or hostile author could write, and want every problem Parse
// reports for it (errors and warnings), in file order.
func TestLintRules(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	tests := []struct {
		name string
		src  string
		want []finding
		// valid is set when only warnings are expected.
		valid bool
	}{
		{
			name: "task listed twice with different num_fewshot",
			src: lintHead + `lm_eval:
  tasks:
    - {name: gsm8k, num_fewshot: 5, model_args: {max_gen_toks: 1}}
    - {name: gsm8k, num_fewshot: 8, expect: {min: 0.9}}
`,
			want: []finding{{"8:7", "task gsm8k is listed twice, at lines 7 and 8"}},
		},
		{
			name: "task listed twice alike",
			src: lintHead + `lm_eval:
  tasks:
    - {name: gsm8k, num_fewshot: 5}
    - {name: gsm8k, num_fewshot: 5}
`,
			want: []finding{{"8:7", "task gsm8k is listed twice, at lines 7 and 8"}},
		},
		{
			name: "bfcl on a server without tool calling",
			src:  lintHead + "bfcl:\n  test_categories: [simple_python]\n",
			want: []finding{{"5:1", "bfcl needs vllm.serve_args --enable-auto-tool-choice and --tool-call-parser <parser>: without them vLLM refuses every request that offers tools"}},
		},
		{
			name: "bfcl on a server with a parser but no auto tool choice",
			src:  "name: ok\ngpu: MI355X\nnum_gpus: 8\nvllm: {model: org/m, serve_args: --tool-call-parser=hermes}\nbfcl:\n  test_categories: [simple_python]\n",
			want: []finding{{"5:1", "bfcl needs vllm.serve_args --enable-auto-tool-choice: without them"}},
		},
		{
			name: "bfcl category listed twice",
			src:  bfclHead + "bfcl:\n  test_categories:\n    - simple_python\n    - simple_python\n",
			want: []finding{{"8:7", `bfcl test category "simple_python" is listed twice, at lines 7 and 8`}},
		},
		{
			name: "bfcl group and its leaf",
			src:  bfclHead + "bfcl:\n  test_categories:\n    - multi_turn\n    - multi_turn_base\n",
			want: []finding{{"8:7", "bfcl test categories multi_turn (line 7) and multi_turn_base (line 8) both run multi_turn_base"}},
		},
		{
			name: "bfcl leaf before its group",
			src:  bfclHead + "bfcl:\n  test_categories: [live_simple, simple_python, non_live]\n",
			want: []finding{{"6:49", "bfcl test categories simple_python (line 6) and non_live (line 6) both run simple_python"}},
		},
		{
			name: "bfcl group after its leaf",
			src:  bfclHead + "bfcl:\n  test_categories: [memory_kv, memory]\n",
			want: []finding{{"6:32", "bfcl test categories memory_kv (line 6) and memory (line 6) both run memory_kv"}},
		},
		{
			name: "num_gpus with a leading zero",
			src:  "name: ok\ngpu: MI355X\nnum_gpus: 010\nvllm: {model: org/m}\n" + lmEvalTail,
			want: []finding{{"3:11", "integer 010 is not in plain decimal form"}},
		},
		{
			name: "num_gpus in hex",
			src:  "name: ok\ngpu: MI355X\nnum_gpus: 0x8\nvllm: {model: org/m}\n" + lmEvalTail,
			want: []finding{{"3:11", "integer 0x8 is not in plain decimal form"}},
		},
		{
			name: "timeout with underscores",
			src:  lintHead + "timeout_in_minutes: 1_000\n" + lmEvalTail,
			want: []finding{{"5:21", "integer 1_000 is not in plain decimal form"}},
		},
		{
			name: "nightly tagged as a YAML 1.1 boolean",
			src:  lintHead + "nightly: !!bool yes\n" + lmEvalTail,
			want: []finding{{"5:10", `explicit YAML tag !!bool on "yes": tags are not accepted`}},
		},
		{
			name: "integer tagged from text",
			src:  lintHead + "lm_eval: {tasks: [{name: gsm8k, num_fewshot: !!int \"5\"}]}\n",
			want: []finding{{"5:46", `explicit YAML tag !!int on "5"`}},
		},
		{
			name: "octal in a bench arg",
			src: lintHead + `vllm_bench:
  configs:
    - {name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2, args: {seed: 010}}
`,
			want: []finding{{"7:112", "integer 010 is not in plain decimal form"}},
		},
		{
			name: "env value with a leading zero",
			src:  "name: ok\ngpu: MI355X\nnum_gpus: 8\nvllm: {model: org/m, env: {VLLM_X: 0755}}\n" + lmEvalTail,
			want: []finding{{"4:36", "integer 0755 is not in plain decimal form"}},
		},
		{
			name: "env the runner would refuse",
			src: lintHead[:len(lintHead)-len("vllm: {model: org/m}\n")] + `vllm:
  model: org/m
  env:
    LD_AUDIT: /tmp/a.so
    BASH_ENV: /tmp/rc
    PYTHONUSERBASE: /tmp/u
    BUILDKITE_AGENT_ACCESS_TOKEN: x
    BENCHKITE_TOOLS: path
` + lmEvalTail,
			want: []finding{
				{"7:5", "vllm.env cannot set LD_AUDIT: the dynamic loader's settings change which libraries are loaded"},
				{"8:5", "vllm.env cannot set BASH_ENV"},
				{"9:5", "vllm.env cannot set PYTHONUSERBASE"},
				{"10:5", "vllm.env cannot set BUILDKITE_AGENT_ACCESS_TOKEN: it is a Buildkite or runner setting"},
				{"11:5", "vllm.env cannot set BENCHKITE_TOOLS"},
			},
		},
		{
			name: "env that sends the Hub token elsewhere",
			src: lintHead[:len(lintHead)-len("vllm: {model: org/m}\n")] + `vllm:
  model: org/m
  env:
    HF_ENDPOINT: https://hf.example.net
    HF_INFERENCE_ENDPOINT: https://x.example.net
    HUGGINGFACE_CO_STAGING: "1"
    HTTPS_PROXY: http://p.example.net:3128
    REQUESTS_CA_BUNDLE: /tmp/ca.pem
    HF_HUB_OFFLINE: "1"
` + lmEvalTail,
			want: []finding{
				{"7:5", "vllm.env cannot set HF_ENDPOINT: it changes where the Hugging Face token is sent"},
				{"8:5", "vllm.env cannot set HF_INFERENCE_ENDPOINT"},
				{"9:5", "vllm.env cannot set HUGGINGFACE_CO_STAGING"},
				{"10:5", "vllm.env cannot set HTTPS_PROXY"},
				{"11:5", "vllm.env cannot set REQUESTS_CA_BUNDLE"},
			},
		},
		{
			name: "accuracy bound as a percentage",
			src:  lintHead + "lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5, expect: {min: 90}}]}\n",
			want: []finding{{"5:63", "lm_eval.tasks[0].expect.min is 90, outside the 0 to 1 range of exact_match,flexible-extract (a fraction: 90 % is 0.9)"}},
		},
		{
			name: "baseline and tolerance as percentages, metric named after them",
			src: lintHead + `lm_eval:
  tasks:
    - name: arc_easy
      num_fewshot: 0
      expect:
        - {baseline: 85, tolerance: 2, metric: "acc,none"}
        - {baseline: 0.85, tolerance: 0.02, metric: "acc_norm,none"}
`,
			want: []finding{
				{"10:22", "lm_eval.tasks[0].expect[0].baseline is 85, outside the 0 to 1 range of acc,none"},
				{"10:37", "lm_eval.tasks[0].expect[0].tolerance is 2, outside the 0 to 1 range of acc,none"},
			},
		},
		{
			name: "bleu is on a 0 to 100 scale",
			src:  lintHead + "lm_eval: {tasks: [{name: wmt16, num_fewshot: 0, expect: {metric: \"bleu,none\", min: 30}}]}\n",
			want: nil, valid: true,
		},
		{
			name: "a metric of unknown range is not bounded",
			src:  lintHead + "lm_eval: {tasks: [{name: wikitext, num_fewshot: 0, expect: {metric: \"word_perplexity,none\", baseline: 12.5, tolerance: 0.5}}]}\n",
			want: nil, valid: true,
		},
		{
			name: "bfcl all holds format_sensitivity",
			src:  bfclHead + "bfcl: {test_categories: [all]}\n",
			want: []finding{{"5:26", "bfcl test category all expands, in bfcl-eval 2026.3.23, to every category and format_sensitivity, which BFCL does not score"}},
		},
		{
			name: "bfcl web search needs a key",
			src:  bfclHead + "bfcl: {test_categories: [web_search_base]}\n",
			want: []finding{{"5:26", "bfcl test category web_search_base needs SERPAPI_API_KEY (bfcl_eval's web search calls SerpAPI with it); the runner does not pass it"}},
		},
		{
			name: "bfcl group holding web search",
			src:  bfclHead + "bfcl: {test_categories: [agentic]}\n",
			want: []finding{{"5:26", "runs web_search_base, web_search_no_snippet, which need SERPAPI_API_KEY (bfcl_eval's web search calls SerpAPI with it); the runner does not pass it, so every search would fail and the score read near zero; list the other sub-categories instead: memory_kv, memory_rec_sum, memory_vector"}},
		},
		{
			name: "bfcl all_scoring holds web search",
			src:  bfclHead + "bfcl: {test_categories: [all_scoring]}\n",
			want: []finding{{"5:26", "bfcl test category all_scoring runs web_search_base, web_search_no_snippet, which need SERPAPI_API_KEY"}},
		},
		{
			name: "bfcl subsample of one entry per leaf",
			src:  bfclHead + "bfcl:\n  test_categories: [multi_turn, simple_python]\n  max_test_cases: {multi_turn: 7, simple_python: 1}\n",
			want: []finding{
				{"7:20", "bfcl.max_test_cases.multi_turn is 7, below 8: the run splits it over 4 sub-categories"},
				{"7:35", "bfcl.max_test_cases.simple_python is 1, below 2"},
			},
		},
		{
			name: "bfcl subsample of two entries per leaf",
			src:  bfclHead + "bfcl:\n  test_categories: [multi_turn, simple_python]\n  max_test_cases: {multi_turn: 8, simple_python: 2}\n",
			want: nil, valid: true,
		},
		{
			name: "bfcl subsample of memory",
			src:  bfclHead + "bfcl:\n  test_categories: [memory]\n  max_test_cases: {memory: 30}\n",
			want: []finding{{"7:20", "bfcl.max_test_cases.memory: subsampling memory_kv is not supported"}},
		},
		{
			name: "misspelled vLLM flag",
			src:  serveArgs("--tensor-paralel-size 8 --enable-prefix-caching"),
			want: []finding{{"7:5", "vllm.serve_args: --tensor-paralel-size is not a vllm serve flag (vLLM 0.33.0); did you mean --tensor-parallel-size?"}},
		},
		{
			name: "misspelled vLLM flag with underscores and a value",
			src:  serveArgs("--gpu_memory_utilisation=0.9"),
			want: []finding{{"7:5", "vllm.serve_args: --gpu-memory-utilisation is not a vllm serve flag (vLLM 0.33.0); did you mean --gpu-memory-utilization?"}},
		},
		{
			name: "misspelled dotted vLLM flag",
			src:  serveArgs("--speculative-confg.method eagle3"),
			want: []finding{{"7:5", "--speculative-confg is not a vllm serve flag (vLLM 0.33.0); did you mean --speculative-config?"}},
		},
		{
			name:  "flag the table does not have",
			src:   serveArgs("--enable-warp-drive -tp 8"),
			want:  []finding{{"7:5", "warning: vllm.serve_args: --enable-warp-drive is not a vllm serve flag in vLLM 0.33.0"}},
			valid: true,
		},
		{
			name:  "abbreviated vLLM flag",
			src:   serveArgs("--max-model 4096"),
			want:  []finding{{"7:5", "warning: vllm.serve_args: --max-model abbreviates --max-model-len"}},
			valid: true,
		},
		{
			name: "negated, short and dotted flags of the table",
			src:  serveArgs("--no-enable-prefix-caching -tp 8 -O3 --compilation-config.mode 3 --max_model_len=4096"),
			want: nil, valid: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, ps := Parse("r.yaml", []byte(tt.src), profiles)
			if diff := cmp.Diff(findings(t, "r.yaml", ps, tt.want), tt.want); diff != "" {
				t.Errorf("Parse() problems diff (-got +want):\n%s\nall:\n%v", diff, ps)
			}
			if (r != nil) != tt.valid {
				t.Errorf("Parse() recipe = %+v, want valid %t", r, tt.valid)
			}
		})
	}
}
