package workloads

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/google/go-cmp/cmp"
)

func profile(t *testing.T, gpu string) agents.Profile {
	t.Helper()
	p, ok := defaultProfiles(t).Lookup(gpu)
	if !ok {
		t.Fatalf("no %s profile", gpu)
	}
	return p
}

// chooseImageCase is a recipe's image chosen on gpu with env: the choice,
// or the error it fails with.
type chooseImageCase struct {
	name    string
	gpu     string
	recipe  *Recipe
	env     map[string]string
	want    ImageChoice
	wantErr string
}

func TestChooseImage(t *testing.T) {
	t.Parallel()
	const sha = "0123456789abcdef0123456789abcdef01234567"
	withImage := &Recipe{VLLM: VLLM{Image: "vllm/vllm-openai:nightly-abc1234"}}
	plain := &Recipe{}
	tests := []chooseImageCase{
		{
			name:   "VLLM_IMAGE wins on NVIDIA",
			gpu:    "H200",
			recipe: withImage,
			env:    map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:nightly-" + sha, "VLLM_COMMIT": "abcdef1"},
			want:   ImageChoice{Image: "vllm/vllm-openai:nightly-" + sha, Commit: sha, Source: "VLLM_IMAGE"},
		},
		{
			name:   "VLLM_IMAGE without a commit tag",
			gpu:    "B200",
			recipe: plain,
			env:    map[string]string{"VLLM_IMAGE": " registry.example:5000/team/vllm:pr-123 "},
			want:   ImageChoice{Image: "registry.example:5000/team/vllm:pr-123", Source: "VLLM_IMAGE"},
		},
		{
			name:   "ROCm VLLM_IMAGE on AMD",
			gpu:    "MI355X",
			recipe: plain,
			env:    map[string]string{"VLLM_IMAGE": "rocm/vllm-dev:nightly"},
			want:   ImageChoice{Image: "rocm/vllm-dev:nightly", Source: "VLLM_IMAGE"},
		},
		{
			name:   "non-ROCm VLLM_IMAGE on AMD falls back to the default",
			gpu:    "MI355X",
			recipe: plain,
			env:    map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:nightly"},
			want: ImageChoice{Image: "vllm/vllm-openai-rocm:nightly", Source: "default",
				Note: "VLLM_IMAGE=vllm/vllm-openai:nightly ignored: it is a CUDA image and MI355X needs ROCm"},
		},
		{
			name:   "non-ROCm VLLM_IMAGE on AMD falls back to VLLM_COMMIT",
			gpu:    "MI300X",
			recipe: withImage,
			env:    map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:nightly", "VLLM_COMMIT": "abcdef1"},
			want: ImageChoice{Image: "vllm/vllm-openai-rocm:nightly-abcdef1", Commit: "abcdef1", Source: "VLLM_COMMIT",
				Note: "VLLM_IMAGE=vllm/vllm-openai:nightly ignored: it is a CUDA image and MI300X needs ROCm"},
		},
		{
			name:   "non-ROCm VLLM_IMAGE on AMD falls back to the recipe",
			gpu:    "MI355X",
			recipe: &Recipe{VLLM: VLLM{Image: "vllm/vllm-openai-rocm:nightly-abc1234"}},
			env:    map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:v0.11.0"},
			want: ImageChoice{Image: "vllm/vllm-openai-rocm:nightly-abc1234", Commit: "abc1234", Source: "recipe",
				Note: "VLLM_IMAGE=vllm/vllm-openai:v0.11.0 ignored: it is a CUDA image and MI355X needs ROCm"},
		},
		{
			name:    "invalid VLLM_IMAGE",
			gpu:     "H200",
			recipe:  plain,
			env:     map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:latest; rm -rf /"},
			wantErr: "VLLM_IMAGE: ",
		},
		{
			name:   "VLLM_COMMIT names a nightly",
			gpu:    "H200",
			recipe: withImage,
			env:    map[string]string{"VLLM_COMMIT": sha},
			want:   ImageChoice{Image: "vllm/vllm-openai:nightly-" + sha, Commit: sha, Source: "VLLM_COMMIT"},
		},
		{
			name:    "VLLM_COMMIT not hex",
			gpu:     "H200",
			recipe:  plain,
			env:     map[string]string{"VLLM_COMMIT": "main"},
			wantErr: `VLLM_COMMIT "main" must be 7 to 40 lower-case hex digits`,
		},
		{
			name:    "VLLM_COMMIT too short",
			gpu:     "H200",
			recipe:  plain,
			env:     map[string]string{"VLLM_COMMIT": "abc12"},
			wantErr: `VLLM_COMMIT "abc12" must be`,
		},
		{
			name:   "recipe image and its commit",
			gpu:    "B200",
			recipe: withImage,
			want:   ImageChoice{Image: "vllm/vllm-openai:nightly-abc1234", Commit: "abc1234", Source: "recipe"},
		},
		{
			name:   "recipe image without a commit",
			gpu:    "B200",
			recipe: &Recipe{VLLM: VLLM{Image: "vllm/vllm-openai:minimax-m3"}},
			want:   ImageChoice{Image: "vllm/vllm-openai:minimax-m3", Source: "recipe"},
		},
		{
			name:   "default nightly",
			gpu:    "B200",
			recipe: plain,
			want:   ImageChoice{Image: "vllm/vllm-openai:nightly", Source: "default"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ChooseImage(tt.recipe, profile(t, tt.gpu), mapEnv(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ChooseImage() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ChooseImage() error = %v", err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("ChooseImage() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestParseImageRef(t *testing.T) {
	t.Parallel()
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		in      string
		want    ImageRef
		wantErr bool
	}{
		{in: "vllm/vllm-openai", want: ImageRef{Repo: "vllm/vllm-openai"}},
		{in: "vllm/vllm-openai:nightly", want: ImageRef{Repo: "vllm/vllm-openai", Tag: "nightly"}},
		{in: "localhost:5000/vllm:v1", want: ImageRef{Repo: "localhost:5000/vllm", Tag: "v1"}},
		{in: "Registry.Example/a/b_c__d:T1@" + digest, want: ImageRef{Repo: "Registry.Example/a/b_c__d", Tag: "T1", Digest: digest}},
		{in: "reg:443/x", want: ImageRef{Repo: "reg:443/x"}},
		{in: "Vllm/vllm-openai", wantErr: true},
		{in: "vllm/VLLM", wantErr: true},
		{in: "vllm/vllm-openai:", wantErr: true},
		{in: "vllm/vllm-openai:-x", wantErr: true},
		{in: "vllm/vllm-openai@sha256:abc", wantErr: true},
		{in: "vllm//openai", wantErr: true},
		{in: "vllm/openai-", wantErr: true},
		{in: "", wantErr: true},
		{in: "a b", wantErr: true},
		{in: "vllm/" + strings.Repeat("a", 260), wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseImageRef(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseImageRef(%q) error = %v, want error: %t", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && got != tt.want {
			t.Errorf("ParseImageRef(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestCommitFromImage(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"vllm/vllm-openai:nightly-abc1234":       "abc1234",
		"vllm/vllm-openai:nightly":               "",
		"vllm/vllm-openai:nightly-ABC1234":       "",
		"vllm/vllm-openai:nightly-abc12":         "",
		"vllm/vllm-openai:v0.11.0":               "",
		"not an image:nightly-abc1234":           "",
		"vllm/vllm-openai-rocm:nightly-0a1b2c3d": "0a1b2c3d",
	} {
		if got := CommitFromImage(in); got != want {
			t.Errorf("CommitFromImage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMergeEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		profile agents.Profile
		recipe  []EnvVar
		want    []EnvVar
	}{
		{
			name:    "profile env overlaid by the recipe, HF_HOME from the profile",
			profile: agents.Profile{HFHome: "/mnt/hf", Env: []agents.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}},
			recipe:  []EnvVar{{"B", "3"}, {"C", "4"}},
			want:    []EnvVar{{"A", "1"}, {"B", "3"}, {"C", "4"}, {"HF_HOME", "/mnt/hf"}},
		},
		{
			name: "container default cache without hf_home",
			want: []EnvVar{{"HF_HOME", "/root/.cache/huggingface"}},
		},
		{
			name:    "recipe HF_HOME wins",
			profile: agents.Profile{HFHome: "/mnt/hf"},
			recipe:  []EnvVar{{"HF_HOME", "/data/hf"}},
			want:    []EnvVar{{"HF_HOME", "/data/hf"}},
		},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(MergeEnv(tt.profile, tt.recipe), tt.want); diff != "" {
			t.Errorf("%s: MergeEnv() diff (-got +want):\n%s", tt.name, diff)
		}
	}
}

func TestMergeArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		base, over []Arg
		want       []Arg
	}{
		{name: "none"},
		{name: "workload only", base: []Arg{{"timeout", "6000"}}, want: []Arg{{"timeout", "6000"}}},
		{name: "task only", over: []Arg{{"max_length", "1"}}, want: []Arg{{"max_length", "1"}}},
		{
			name: "task overrides in place and appends",
			base: []Arg{{"a", "1"}, {"b", "2"}, {"c", "3"}},
			over: []Arg{{"b", "20"}, {"d", "4"}},
			want: []Arg{{"a", "1"}, {"b", "20"}, {"c", "3"}, {"d", "4"}},
		},
	}
	for _, tt := range tests {
		base := append([]Arg(nil), tt.base...)
		if diff := cmp.Diff(MergeArgs(tt.base, tt.over), tt.want); diff != "" {
			t.Errorf("%s: MergeArgs() diff (-got +want):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.base, base); diff != "" {
			t.Errorf("%s: MergeArgs() changed its base (-got +want):\n%s", tt.name, diff)
		}
	}
}

func TestExpandBench(t *testing.T) {
	t.Parallel()
	args := []BenchArg{{Flag: "--num-warmups", Values: []string{"8"}}, {Flag: "--disable-tqdm"}, {Flag: "--temperature", Values: []string{"0.6"}}, {Flag: "--percentile-metrics", Values: []string{"ttft", "tpot"}}}
	bench := &Bench{Configs: []BenchConfig{
		{Name: "one", Backend: "openai", InputLen: 8, OutputLen: 4, NumPrompts: []int{32}, MaxConcurrency: []int{16}, Repetitions: 3, Args: args},
		{Name: "paired", Backend: "openai-chat", InputLen: 1, OutputLen: 2, NumPrompts: []int{512, 10}, MaxConcurrency: []int{128, 1}, Repetitions: 1},
		{Name: "shared", Backend: "openai", InputLen: 1, OutputLen: 2, NumPrompts: []int{64}, MaxConcurrency: []int{4, 8}, Repetitions: 1},
	}}
	flat := []string{"--num-warmups", "8", "--disable-tqdm", "--percentile-metrics", "ttft", "tpot"}
	// A sweep runs lowest concurrency first, each point with its prompts.
	want := []BenchRun{
		{Name: "one", Config: "one", Backend: "openai", InputLen: 8, OutputLen: 4, NumPrompts: 32, Concurrency: 16, Repetitions: 3, Temperature: 0.6, TemperatureSource: "recipe", Args: flat},
		{Name: "paired-conc-1", Config: "paired", Backend: "openai-chat", InputLen: 1, OutputLen: 2, NumPrompts: 10, Concurrency: 1, Repetitions: 1, TemperatureSource: "default"},
		{Name: "paired-conc-128", Config: "paired", Backend: "openai-chat", InputLen: 1, OutputLen: 2, NumPrompts: 512, Concurrency: 128, Repetitions: 1, TemperatureSource: "default"},
		{Name: "shared-conc-4", Config: "shared", Backend: "openai", InputLen: 1, OutputLen: 2, NumPrompts: 64, Concurrency: 4, Repetitions: 1, TemperatureSource: "default"},
		{Name: "shared-conc-8", Config: "shared", Backend: "openai", InputLen: 1, OutputLen: 2, NumPrompts: 64, Concurrency: 8, Repetitions: 1, TemperatureSource: "default"},
	}
	if diff := cmp.Diff(ExpandBench(bench), want); diff != "" {
		t.Errorf("ExpandBench() diff (-got +want):\n%s", diff)
	}
	if got := ExpandBench(nil); got != nil {
		t.Errorf("ExpandBench(nil) = %v, want nil", got)
	}
}

func TestPrecisionOf(t *testing.T) {
	t.Parallel()
	type label struct{ precision, source string }
	name := func(p string) label { return label{p, PrecisionFromModel} }
	for model, want := range map[string]label{
		"nvidia/MiniMax-M3-NVFP4":                       name("nvfp4"),
		"amd/MiniMax-M3-MXFP4":                          name("mxfp4"),
		"org/Model-FP4":                                 name("fp4"),
		"MiniMaxAI/MiniMax-M3-MXFP8":                    name("mxfp8"),
		"RedHatAI/gemma-4-31B-it-FP8-dynamic":           name("fp8"),
		"Qwen/Qwen3.5-397B-A17B-FP8":                    name("fp8"),
		"RedHatAI/Llama-3.1-8B-Instruct-quantized.w8a8": name("int8"),
		"org/Model-INT8":                                name("int8"),
		"org/Model-AWQ":                                 name("int4"),
		"org/Model-GPTQ-Int4":                           name("int4"),
		"org/Model-quantized.w4a16":                     name("int4"),
		"org/Model-BF16":                                name("bf16"),
		"org/Model-fp16":                                name("fp16"),
		"deepseek-ai/DeepSeek-V4-Flash":                 {"bf16", PrecisionGuessed},
		"/models/fp8-dir/plain":                         {"bf16", PrecisionGuessed},
		"plain":                                         {"bf16", PrecisionGuessed},
	} {
		p, src := PrecisionOf(model)
		if got := (label{p, src}); got != want {
			t.Errorf("PrecisionOf(%q) = %v, want %v", model, got, want)
		}
	}
}

func TestSplitServeArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "  \n\t ", want: nil},
		{in: "--a 1  --b\n--c", want: []string{"--a", "1", "--b", "--c"}},
		{in: `--chat-template 'a b "c"'`, want: []string{"--chat-template", `a b "c"`}},
		{in: `--x "a \"b\" \\ \$HOME \n"`, want: []string{"--x", `a "b" \ $HOME \n`}},
		{in: `--x a\ b \;`, want: []string{"--x", "a b", ";"}},
		{in: `--x ''`, want: []string{"--x", ""}},
		{in: `--x pre'quoted'post`, want: []string{"--x", "prequotedpost"}},
		{
			in:   `--compilation-config {"mode":0,"cudagraph_mode":"FULL_DECODE_ONLY"} --next`,
			want: []string{"--compilation-config", `{"mode":0,"cudagraph_mode":"FULL_DECODE_ONLY"}`, "--next"},
		},
		{
			in:   `--speculative-config={"method": "eagle3", "model": "a/b", "s": "}{ $(x)"}`,
			want: []string{`--speculative-config={"method": "eagle3", "model": "a/b", "s": "}{ $(x)"}`},
		},
		{in: `--list [1, [2, 3]]`, want: []string{"--list", "[1, [2, 3]]"}},
		{in: `--x '{"a": 1}'`, want: []string{"--x", `{"a": 1}`}},
		{in: `--x a{b}`, want: []string{"--x", "a{b}"}},
		{in: "--a 1; rm -rf /", wantErr: `unquoted ';' in "1; rm -rf /"`},
		{in: "--a x|y", wantErr: `unquoted '|'`},
		{in: "--a x && y", wantErr: `unquoted '&'`},
		{in: "--a `id`", wantErr: "unquoted '`'"},
		{in: "--a $HOME", wantErr: `unquoted '$'`},
		{in: "--a >out", wantErr: `unquoted '>'`},
		{in: "--a 'open", wantErr: `unterminated ' quote in "'open"`},
		{in: `--a "open \"`, wantErr: `unterminated " quote`},
		{in: `--a x\`, wantErr: "lone backslash"},
		{in: `--c {"a":1,}`, wantErr: `{"a":1,} is not valid JSON`},
		{in: `--c {"a":[1}`, wantErr: "unterminated JSON value"},
		{in: `--c {"a":1]`, wantErr: "is not valid JSON"},
		{in: `--c {"a":1`, wantErr: `unterminated JSON value "{\"a\":1"`},
	}
	for _, tt := range tests {
		words, err := splitServeArgs(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("splitServeArgs(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("splitServeArgs(%q) error = %v", tt.in, err)
			continue
		}
		var got []string
		for _, w := range words {
			got = append(got, w.text)
			if !strings.Contains(tt.in, w.raw) {
				t.Errorf("splitServeArgs(%q): raw %q of %q is not in the input", tt.in, w.raw, w.text)
			}
		}
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("splitServeArgs(%q) diff (-got +want):\n%s", tt.in, diff)
		}
	}
}

func TestNormalizeFlag(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"--tensor_parallel_size":                      "--tensor-parallel-size",
		"--tensor-parallel-size":                      "--tensor-parallel-size",
		"--speculative_config.num_speculative_tokens": "--speculative-config.num_speculative_tokens",
		"--attention_config.use_fp4_indexer_cache":    "--attention-config.use_fp4_indexer_cache",
		"-tp":        "-tp",
		"-O":         "-O",
		"value_text": "value_text",
	} {
		if got := normalizeFlag(in); got != want {
			t.Errorf("normalizeFlag(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestServeInfo covers how serve args are read: the parallel sizes in every
// spelling, and the speculative config in dotted and JSON form.
func TestServeInfo(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	tests := []struct {
		args string
		want ServeInfo
	}{
		{args: "-tp 4", want: ServeInfo{TP: 4, DP: 1, PP: 1}},
		{args: "-tp=2 -dp=2 -pp 2", want: ServeInfo{TP: 2, DP: 2, PP: 2}},
		{args: "--tensor-parallel-size=8", want: ServeInfo{TP: 8, DP: 1, PP: 1}},
		{args: "--data_parallel_size 8 -ep", want: ServeInfo{TP: 1, DP: 8, PP: 1, ExpertParallel: true}},
		{
			args: `--served-model-name my/model --kv-cache-dtype fp8 --trust-remote-code`,
			want: ServeInfo{TP: 1, DP: 1, PP: 1, ServedModelName: "my/model", KVCacheDType: "fp8", TrustRemoteCode: true},
		},
		{
			args: `--speculative-config {"method":"eagle3","model":"org/drafter","num_speculative_tokens":3}`,
			want: ServeInfo{TP: 1, DP: 1, PP: 1, Speculative: &Speculative{Method: "eagle3", Model: "org/drafter", NumTokens: 3}},
		},
		{
			args: `--speculative_config.method=mtp --speculative-config.num_speculative_tokens 2`,
			want: ServeInfo{TP: 1, DP: 1, PP: 1, Speculative: &Speculative{Method: "mtp", NumTokens: 2}},
		},
	}
	for _, tt := range tests {
		src := "name: ok\ngpu: MI355X\nnum_gpus: 8\nvllm:\n  model: org/m\n  serve_args: '" + tt.args + "'\nlm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}\n"
		r, ps := Parse("r.yaml", []byte(src), profiles)
		if r == nil {
			t.Errorf("serve_args %q: Parse() problems:\n%v", tt.args, ps)
			continue
		}
		if tt.want.ServedModelName == "" {
			tt.want.ServedModelName = "org/m"
		}
		if diff := cmp.Diff(r.VLLM.Serve, tt.want); diff != "" {
			t.Errorf("serve_args %q: ServeInfo diff (-got +want):\n%s", tt.args, diff)
		}
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	src := `name: ok
gpu: h200
num_gpus: 8
vllm:
  model: org/Model-FP8
  env: {VLLM_DEEP_GEMM_WARMUP: full, EXTRA: 1}
  serve_args: --tensor-parallel-size 4 --data-parallel-size 2
lm_eval:
  model_args: {timeout: 6000, max_length: 1024}
  tasks:
    - {name: gsm8k, num_fewshot: 5, model_args: {max_length: 4096}}
vllm_bench:
  metadata: {precision: fp8-dynamic}
  configs:
    - {name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: [4, 8], max_concurrency: [1, 2]}
`
	r, ps := Parse("r.yaml", []byte(src), profiles)
	if r == nil {
		t.Fatalf("Parse() problems:\n%v", ps)
	}
	got, err := Resolve(r, profiles, mapEnv(map[string]string{"H200_QUEUE": "h200-canary"}))
	if err != nil {
		t.Fatalf("Resolve() error = %v", err)
	}
	if got.Profile.GPU != "H200" || got.Device != "h200" || got.Precision != "fp8-dynamic" || got.TP != 4 || got.DP != 2 || got.PP != 1 {
		t.Errorf("Resolve() = GPU %s, device %s, precision %s, TP %d, DP %d, PP %d; want H200, h200, fp8-dynamic, 4, 2, 1",
			got.Profile.GPU, got.Device, got.Precision, got.TP, got.DP, got.PP)
	}
	if got.Queue != "h200-canary" || got.QueueSource != "H200_QUEUE" {
		t.Errorf("queue = %s from %s, want h200-canary from H200_QUEUE", got.Queue, got.QueueSource)
	}
	if got.Image.Image != "vllm/vllm-openai:nightly" {
		t.Errorf("image = %s, want the default nightly", got.Image.Image)
	}
	wantEnv := []EnvVar{{"VLLM_DEEP_GEMM_WARMUP", "full"}, {"EXTRA", "1"}, {"HF_HOME", "/mnt/shared/hf-models"}}
	if diff := cmp.Diff(got.Env, wantEnv); diff != "" {
		t.Errorf("Env diff (-got +want):\n%s", diff)
	}
	wantTasks := []ResolvedTask{{Name: "gsm8k", NumFewshot: 5, ModelArgs: []Arg{{"timeout", "6000"}, {"max_length", "4096"}}}}
	if diff := cmp.Diff(got.Tasks, wantTasks); diff != "" {
		t.Errorf("Tasks diff (-got +want):\n%s", diff)
	}
	if len(got.BenchRuns) != 2 || got.BenchRuns[1].Name != "c-conc-2" {
		t.Errorf("BenchRuns = %+v, want c-conc-1 and c-conc-2", got.BenchRuns)
	}
	if diff := cmp.Diff(got.ServeArgv(8123), []string{"vllm", "serve", "org/Model-FP8", "--port", "8123", "--tensor-parallel-size", "4", "--data-parallel-size", "2"}); diff != "" {
		t.Errorf("ServeArgv() diff (-got +want):\n%s", diff)
	}

	// Metadata absent: precision from the model name, TP from the serve args.
	r.Bench.Metadata = BenchMetadata{}
	if got, _ := Resolve(r, profiles, mapEnv(nil)); got.Precision != "fp8" || got.TP != 4 || got.Queue != "H200" {
		t.Errorf("without metadata: precision %s, TP %d, queue %s; want fp8, 4, H200", got.Precision, got.TP, got.Queue)
	}

	if got, _ := Resolve(r, profiles, mapEnv(nil)); got.TokenizerMode != "" || got.PullImage != got.Image.Image || got.PullImageSource != "" {
		t.Errorf("TokenizerMode %q, PullImage %q from %q; want none, the image as chosen", got.TokenizerMode, got.PullImage, got.PullImageSource)
	}

	r.GPU = "A100"
	if _, err := Resolve(r, profiles, mapEnv(nil)); err == nil || !strings.Contains(err.Error(), `unknown gpu "A100"; known: B200, B300, H200, MI300X, MI355X`) {
		t.Errorf("Resolve(unknown gpu) error = %v", err)
	}
	r.GPU = "H200"
	if _, err := Resolve(r, profiles, mapEnv(map[string]string{"H200_IMAGE_REWRITE": "nope"})); err == nil || !strings.Contains(err.Error(), "recipe ok: H200_IMAGE_REWRITE must be FROM=TO") {
		t.Errorf("Resolve(bad H200_IMAGE_REWRITE) error = %v", err)
	}
	if _, err := Resolve(r, profiles, mapEnv(map[string]string{"VLLM_COMMIT": "nope"})); err == nil || !strings.Contains(err.Error(), "recipe ok: VLLM_COMMIT") {
		t.Errorf("Resolve(bad VLLM_COMMIT) error = %v", err)
	}
}

func TestResolveTokenizerModeAndPullImage(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	src := `name: ok
gpu: B200
num_gpus: 1
vllm:
  model: org/m
  image: public.ecr.aws/q9t5s3a7/vllm-ci-test-repo:abc
  serve_args: --tokenizer_mode=mistral -tp 1
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`
	r, ps := Parse("r.yaml", []byte(src), profiles)
	if r == nil {
		t.Fatalf("Parse() problems:\n%v", ps)
	}
	got, err := Resolve(r, profiles, mapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mistral", "public.ecr.aws/q9t5s3a7/vllm-ci-test-repo:abc", "936637512419.dkr.ecr.us-west-2.amazonaws.com/vllm-ci-pull-through-cache/q9t5s3a7/vllm-ci-test-repo:abc", "profile"}
	if diff := cmp.Diff([]string{got.TokenizerMode, got.Image.Image, got.PullImage, got.PullImageSource}, want); diff != "" {
		t.Errorf("Resolve() [tokenizer mode, image, pull image, source] diff (-got +want):\n%s", diff)
	}
}

func TestServeFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv  []string
		flag  string
		want  string
		found bool
	}{
		{argv: []string{"--tokenizer-mode", "mistral"}, flag: "--tokenizer-mode", want: "mistral", found: true},
		{argv: []string{"--tokenizer_mode=slow"}, flag: "--tokenizer-mode", want: "slow", found: true},
		{argv: []string{"-tp", "8"}, flag: "--tensor-parallel-size", want: "8", found: true},
		{argv: []string{"-q", "fp8"}, flag: "--quantization", want: "fp8", found: true},
		{argv: []string{"--trust-remote-code"}, flag: "--trust-remote-code", found: true},
		{argv: []string{"--max-model-len", "1"}, flag: "--tokenizer-mode"},
	}
	for _, tt := range tests {
		got, found := ServeFlag(tt.argv, tt.flag)
		if got != tt.want || found != tt.found {
			t.Errorf("ServeFlag(%q, %s) = %q, %t; want %q, %t", tt.argv, tt.flag, got, found, tt.want, tt.found)
		}
	}
}

func TestServeArgsShortForms(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	tests := []struct {
		name, args string
		want       *Speculative
	}{
		{name: "-sc with JSON", args: `-sc {"method":"eagle3","model":"org/d","num_speculative_tokens":3} -O 3 -cc {"mode":3}`, want: &Speculative{Method: "eagle3", Model: "org/d", NumTokens: 3}},
		{name: "-sc dotted", args: `-sc.method mtp -sc.num_speculative_tokens=2 -O3 -ac.backend FLASH_ATTN`, want: &Speculative{Method: "mtp", NumTokens: 2}},
		{name: "-O is not the compilation config", args: `-O=2 --compilation-config {"mode":3}`},
	}
	for _, tt := range tests {
		src := "name: ok\ngpu: MI355X\nnum_gpus: 8\nvllm:\n  model: org/m\n  serve_args: '" + tt.args + "'\nlm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}\n"
		r, ps := Parse("r.yaml", []byte(src), profiles)
		if r == nil {
			t.Errorf("%s: Parse() problems:\n%v", tt.name, ps)
			continue
		}
		if diff := cmp.Diff(r.VLLM.Serve.Speculative, tt.want); diff != "" {
			t.Errorf("%s: Speculative diff (-got +want):\n%s", tt.name, diff)
		}
	}
}

func TestBenchTemperature(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	src := `name: ok
gpu: MI355X
num_gpus: 8
vllm: {model: org/m}
vllm_bench:
  configs:
    - {name: a, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2, args: {temperature: 0.7, num_warmups: 2}}
    - {name: b, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}
`
	r, ps := Parse("r.yaml", []byte(src), profiles)
	if r == nil {
		t.Fatalf("Parse() problems:\n%v", ps)
	}
	res, err := Resolve(r, profiles, mapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	type temp struct {
		T    float64
		From string
		Args []string
	}
	var got []temp
	for _, b := range res.BenchRuns {
		got = append(got, temp{b.Temperature, b.TemperatureSource, b.Args})
	}
	want := []temp{{0.7, "recipe", []string{"--num-warmups", "2"}}, {0, "default", nil}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("bench temperatures diff (-got +want):\n%s", diff)
	}
}
