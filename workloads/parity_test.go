package workloads

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/agents"
	"github.com/google/go-cmp/cmp"
)

// problemList is every problem of a parse, as path:line:col: message.
func problemList(ps Problems) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Error())
	}
	return out
}

// parseWithProblems parses src as r.yaml, and stops the test unless its
// problems are want.
func parseWithProblems(t *testing.T, src string, profiles *agents.Set, want []string) (*Recipe, Problems) {
	t.Helper()
	r, ps := Parse("r.yaml", []byte(src), profiles)
	if diff := cmp.Diff(problemList(ps), want); diff != "" {
		t.Fatalf("Parse() problems diff (-got +want):\n%s", diff)
	}
	return r, ps
}

func TestStartupTimeout(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	base := "name: s\ngpu: H200\nnum_gpus: 1\nvllm_bench:\n  configs: [{name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}]\n"
	tests := []struct {
		name string
		src  string
		want time.Duration
		// step is StepTimeout(), in minutes.
		step int
		// problems are errors and warnings.
		problems []string
	}{
		{name: "default", src: "vllm: {model: o/m}\n", want: time.Hour, step: 120},
		{name: "set", src: "vllm: {model: o/m, startup_timeout_s: 5400}\n", want: 90 * time.Minute, step: 120},
		{name: "fits the step it sets", src: "timeout_in_minutes: 30\nvllm: {model: o/m, startup_timeout_s: 1500}\n", want: 1500 * time.Second, step: 30},
		{name: "older spelling", src: "timeout_in_minutes: 60\nvllm: {model: o/m, startup_timeout: 900}\n", want: 900 * time.Second, step: 60,
			problems: []string{"r.yaml:7:20: warning: vllm.startup_timeout is the older spelling of vllm.startup_timeout_s (seconds); rename it"}},
		{name: "both spellings", src: "vllm: {model: o/m, startup_timeout_s: 900, startup_timeout: 900}\n",
			problems: []string{"r.yaml:6:44: vllm sets both startup_timeout_s and startup_timeout; keep startup_timeout_s"}},
		{name: "zero", src: "vllm: {model: o/m, startup_timeout_s: 0}\n",
			problems: []string{"r.yaml:6:39: vllm.startup_timeout_s must be between 1 and 86400, got 0"}},
		{name: "not an integer", src: "vllm: {model: o/m, startup_timeout_s: 1.5}\n",
			problems: []string{"r.yaml:6:39: vllm.startup_timeout_s must be an integer, got number 1.5"}},
		{name: "the default step grows to fit the wait", src: "vllm: {model: o/m, startup_timeout_s: 7200}\n", want: 2 * time.Hour, step: 180,
			problems: []string{"r.yaml:6:39: warning: vllm.startup_timeout_s: the server's start-up wait (vllm.startup_timeout_s 7200 s, default 3600) does not fit in the step's timeout (the default, 120 min) with 5 min to spare; the step's timeout is raised to 180 min (the wait plus 60 min for the work); set timeout_in_minutes to choose"}},
		{name: "a short step grows to fit the default wait", src: "timeout_in_minutes: 60\nvllm: {model: o/m}\n", want: time.Hour, step: 120,
			problems: []string{"r.yaml:6:21: warning: timeout_in_minutes: the server's start-up wait (vllm.startup_timeout_s 3600 s, default 3600) does not fit in the step's timeout (timeout_in_minutes, 60 min) with 5 min to spare; the step's timeout is raised to 120 min (the wait plus 60 min for the work); set timeout_in_minutes to choose"}},
		{name: "capped at a day", src: "vllm: {model: o/m, startup_timeout_s: 84000}\n", want: 84000 * time.Second, step: 24 * 60,
			problems: []string{"r.yaml:6:39: warning: vllm.startup_timeout_s: the server's start-up wait (vllm.startup_timeout_s 84000 s, default 3600) does not fit in the step's timeout (the default, 120 min) with 5 min to spare; the step's timeout is raised to 1440 min (the wait plus 60 min for the work); set timeout_in_minutes to choose"}},
		{name: "no step holds the wait", src: "vllm: {model: o/m, startup_timeout_s: 86400}\n",
			problems: []string{"r.yaml:6:39: vllm.startup_timeout_s: the server's start-up wait (86400 s) leaves less than 5 min of the longest step (1440 min); lower startup_timeout_s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, ps := parseWithProblems(t, base+tt.src, profiles, tt.problems)
			if r == nil {
				if len(ps.Errors()) == 0 {
					t.Fatal("Parse() = nil without errors")
				}
				return
			}
			if r.StartupTimeout() != tt.want {
				t.Errorf("StartupTimeout() = %s, want %s", r.StartupTimeout(), tt.want)
			}
			if r.StepTimeout() != tt.step {
				t.Errorf("StepTimeout() = %d, want %d", r.StepTimeout(), tt.step)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	recipe := func(gpu, vllm string) string {
		return "name: b\ngpu: " + gpu + "\nnum_gpus: 1\nvllm_bench:\n  configs: [{name: c, backend: openai, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}]\nvllm:\n  model: o/m\n" + vllm
	}
	tests := []struct {
		name string
		src  string
		want *Build
		errs []string
	}{
		{name: "full", src: recipe("H200", "  image: vllm-local:pr-1\n  build:\n    dockerfile: docker/Dockerfile\n    context: ./src/\n    args: {MAX_JOBS: 16, GIT_TOKEN: null}\n"),
			want: &Build{Dockerfile: "docker/Dockerfile", Context: "src", Args: []BuildArg{{Name: "MAX_JOBS", Value: "16"}, {Name: "GIT_TOKEN", FromEnv: true}}}},
		{name: "context defaults to the checkout", src: recipe("XPU", "  image: vllm-local:xpu\n  build: {dockerfile: Dockerfile.xpu}\n"),
			want: &Build{Dockerfile: "Dockerfile.xpu", Context: "."}},
		{name: "native host", src: recipe("B200", "  image: vllm-local:x\n  build: {dockerfile: D}\n"),
			errs: []string{"r.yaml:9:10: vllm.build needs a docker host; B200 runs native, where the job is the image's own pod"}},
		{name: "no image", src: recipe("H200", "  build: {dockerfile: D}\n"),
			errs: []string{"r.yaml:8:10: vllm.build needs vllm.image: the tag the built image gets, such as vllm-local:my-branch"}},
		{name: "image without a tag", src: recipe("H200", "  image: vllm-local\n  build: {dockerfile: D}\n"),
			errs: []string{`r.yaml:8:10: vllm.image "vllm-local": a built image needs an explicit tag and no digest (the build makes the digest)`}},
		{name: "paths leave the checkout", src: recipe("H200", "  image: v:t\n  build: {dockerfile: ../D, context: /src, args: {1X: a}}\n"),
			errs: []string{
				`r.yaml:9:23: vllm.build.dockerfile "../D" leaves the checkout`,
				`r.yaml:9:38: vllm.build.context "/src": absolute; paths are relative to the checkout and may not leave it`,
				`r.yaml:9:51: build arg name "1X" must match [A-Za-z_][A-Za-z0-9_]*`,
			}},
		// The job's tokens go to no build: lint refuses what the runner would.
		{name: "token-named build args", src: recipe("H200", "  image: v:t\n  build: {dockerfile: D, args: {BUILDKITE_AGENT_ACCESS_TOKEN: null, BENCHKITE_INGEST_TOKEN: x, HF_TOKEN: null}}\n"),
			errs: []string{
				`r.yaml:9:33: build arg BUILDKITE_AGENT_ACCESS_TOKEN may not be passed: it is a Buildkite or runner setting, whose tokens the runner passes to no build`,
				`r.yaml:9:69: build arg BENCHKITE_INGEST_TOKEN may not be passed: it is a Buildkite or runner setting, whose tokens the runner passes to no build`,
			}},
		{name: "no dockerfile", src: recipe("H200", "  image: v:t\n  build: {context: a/../..}\n"),
			errs: []string{
				`r.yaml:9:10: vllm.build needs dockerfile`,
				`r.yaml:9:20: vllm.build.context "a/../.." leaves the checkout`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _ := parseWithProblems(t, tt.src, profiles, tt.errs)
			if r != nil {
				if diff := cmp.Diff(r.VLLM.Build, tt.want); diff != "" {
					t.Errorf("Build diff (-got +want):\n%s", diff)
				}
			}
		})
	}
}

func TestChooseImagePlatforms(t *testing.T) {
	t.Parallel()
	built := &Recipe{VLLM: VLLM{Image: "vllm-local:pr-1", Build: &Build{Dockerfile: "D", Context: "."}}}
	tests := []struct {
		name    string
		gpu     string
		recipe  *Recipe
		env     map[string]string
		want    ImageChoice
		wantErr error
	}{
		{name: "ROCm image on NVIDIA is ignored", gpu: "H200", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE": "rocm/vllm-dev:nightly"},
			want: ImageChoice{Image: "vllm/vllm-openai:nightly", Source: "default", Note: "VLLM_IMAGE=rocm/vllm-dev:nightly ignored: it is a ROCm image and H200 needs CUDA"}},
		{name: "CUDA release tag with a commit selects no ROCm nightly", gpu: "MI355X", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:v0.11.0-1a2b3c4d"},
			want: ImageChoice{Image: "vllm/vllm-openai-rocm:nightly", Source: "default", Note: "VLLM_IMAGE=vllm/vllm-openai:v0.11.0-1a2b3c4d ignored: it is a CUDA image and MI355X needs ROCm; the commit its tag names (1a2b3c4d) selects no ROCm image"}},
		{name: "a date is not a commit", gpu: "XPU", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:nightly-20261201"},
			want: ImageChoice{Image: "vllm/vllm-openai-xpu:nightly", Source: "default", Note: "VLLM_IMAGE=vllm/vllm-openai:nightly-20261201 ignored: it is a CUDA image and XPU needs XPU"}},
		{name: "XPU image on XPU", gpu: "XPU", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE": "vllm/vllm-openai-xpu:nightly-abcdef1"},
			want: ImageChoice{Image: "vllm/vllm-openai-xpu:nightly-abcdef1", Commit: "abcdef1", Source: "VLLM_IMAGE"}},
		{name: "XPU image on AMD", gpu: "MI300X", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE": "intel/vllm:xpu-1"},
			want: ImageChoice{Image: "vllm/vllm-openai-rocm:nightly", Source: "default", Note: "VLLM_IMAGE=intel/vllm:xpu-1 ignored: it is a XPU image and MI300X needs ROCm"}},
		{name: "a built image", gpu: "H200", recipe: built,
			want: ImageChoice{Image: "vllm-local:pr-1", Source: "build", Note: "built on the host from D"}},
		{name: "a built image with its own tag in VLLM_IMAGE", gpu: "H200", recipe: built, env: map[string]string{"VLLM_IMAGE": "vllm-local:pr-1"},
			want: ImageChoice{Image: "vllm-local:pr-1", Source: "build", Note: "built on the host from D"}},
		{name: "a built image and VLLM_IMAGE", gpu: "H200", recipe: built, env: map[string]string{"VLLM_IMAGE": "vllm/vllm-openai:nightly"}, wantErr: ErrBuildOverride},
		{name: "a built image and another platform's VLLM_IMAGE", gpu: "H200", recipe: built, env: map[string]string{"VLLM_IMAGE": "rocm/vllm:nightly"},
			want: ImageChoice{Image: "vllm-local:pr-1", Source: "build", Note: "built on the host from D; VLLM_IMAGE=rocm/vllm:nightly ignored: it is a ROCm image and H200 needs CUDA"}},
		{name: "a built image and VLLM_COMMIT", gpu: "H200", recipe: built, env: map[string]string{"VLLM_COMMIT": "abcdef1"}, wantErr: ErrBuildOverride},
		{name: "a built image and its platform's pin", gpu: "H200", recipe: built, env: map[string]string{"VLLM_IMAGE_CUDA": "vllm/vllm-openai:nightly"}, wantErr: ErrBuildOverride},
		{name: "a built image and another platform's pin", gpu: "H200", recipe: built, env: map[string]string{"VLLM_IMAGE_ROCM": "rocm/vllm:nightly"},
			want: ImageChoice{Image: "vllm-local:pr-1", Source: "build", Note: "built on the host from D"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ChooseImage(tt.recipe, profile(t, tt.gpu), mapEnv(tt.env))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ChooseImage() error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil {
				if !strings.Contains(err.Error(), "builds vllm-local:pr-1 from D") {
					t.Errorf("ChooseImage() error = %v, want it to name the build", err)
				}
				return
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("ChooseImage() diff (-got +want):\n%s", diff)
			}
		})
	}
}

// TestChooseImagePlatformPins: VLLM_IMAGE_CUDA, VLLM_IMAGE_ROCM and
// VLLM_IMAGE_XPU pin each platform's image above everything else; a build
// that pins some platforms and sets no VLLM_IMAGE has no image for the
// others.
func TestChooseImagePlatformPins(t *testing.T) {
	t.Parallel()
	rocm := "rocm/vllm-dev:rc2-20261201"
	cuda := "public.ecr.aws/q9t5s3a7/vllm-release-repo:7ce42a9bb874a3491819807870e3efebde2845bd-x86_64"
	tests := []chooseImageCase{
		{name: "the ROCm pin wins over VLLM_IMAGE, VLLM_COMMIT and the recipe", gpu: "MI355X", recipe: &Recipe{VLLM: VLLM{Image: "rocm/vllm:old"}},
			env:  map[string]string{"VLLM_IMAGE_ROCM": rocm, "VLLM_IMAGE": "rocm/vllm:other", "VLLM_COMMIT": "abcdef1"},
			want: ImageChoice{Image: rocm, Source: "VLLM_IMAGE_ROCM"}},
		{name: "the CUDA pin on NVIDIA", gpu: "B200", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE_CUDA": cuda, "VLLM_IMAGE_ROCM": rocm},
			want: ImageChoice{Image: cuda, Source: "VLLM_IMAGE_CUDA"}},
		{name: "the CUDA pin is not ROCm's", gpu: "MI300X", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE_CUDA": cuda},
			wantErr: "no image for this platform in this build: it pins VLLM_IMAGE_CUDA but not VLLM_IMAGE_ROCM, and sets no VLLM_IMAGE; set VLLM_IMAGE_ROCM to run r"},
		{name: "nor XPU's, even with VLLM_COMMIT", gpu: "XPU", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE_CUDA": cuda, "VLLM_IMAGE_ROCM": rocm, "VLLM_COMMIT": "abcdef1"},
			wantErr: "no image for this platform in this build: it pins VLLM_IMAGE_CUDA, VLLM_IMAGE_ROCM but not VLLM_IMAGE_XPU, and sets no VLLM_IMAGE; set VLLM_IMAGE_XPU to run r"},
		{name: "VLLM_IMAGE still serves a platform without a pin", gpu: "MI300X", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE_CUDA": cuda, "VLLM_IMAGE": "rocm/vllm:x"},
			want: ImageChoice{Image: "rocm/vllm:x", Source: "VLLM_IMAGE"}},
		{name: "a pin that reads as another platform is used, with a note", gpu: "MI300X", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE_ROCM": "example/vllm:test"},
			want: ImageChoice{Image: "example/vllm:test", Source: "VLLM_IMAGE_ROCM", Note: "VLLM_IMAGE_ROCM=example/vllm:test does not look like a ROCm image (its name reads CUDA); used as pinned"}},
		{name: "a nightly pin names its commit", gpu: "H200", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE_CUDA": "vllm/vllm-openai:nightly-abcdef1"},
			want: ImageChoice{Image: "vllm/vllm-openai:nightly-abcdef1", Commit: "abcdef1", Source: "VLLM_IMAGE_CUDA"}},
		{name: "a bad pin names its variable", gpu: "H200", recipe: &Recipe{}, env: map[string]string{"VLLM_IMAGE_CUDA": "Not An Image"},
			wantErr: `VLLM_IMAGE_CUDA: "Not An Image" is not a valid image reference`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.recipe.Name = "r"
			got, err := ChooseImage(tt.recipe, profile(t, tt.gpu), mapEnv(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ChooseImage() error = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(tt.wantErr, "no image for") && !errors.Is(err, ErrNoPlatformImage) {
					t.Errorf("ChooseImage() error = %v, want ErrNoPlatformImage", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("ChooseImage() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestAIPerf(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	head := "name: a\ngpu: H200\nnum_gpus: 1\nvllm: {model: o/m}\naiperf:\n"
	tests := []struct {
		name string
		src  string
		want *AIPerf
		errs []string
	}{
		{
			name: "the shape users write, alone in the recipe",
			src: `  configs:
    - name: prefix
      args:
        endpoint-type: chat
        --streaming: true
        num_prefix_prompts: 8
        extra-inputs: ["ignore_eos:true", "max_tokens:350"]
        sweep-type: zip
        concurrency: "16,24"
        verbose: false
        random-seed: 42
      assertions: {request_throughput: {min: 1}, time_to_first_token_p99_ms: {max: 900}}
      regression: {metrics: {output_token_throughput: {max_drop_pct: 5}}}
`,
			want: &AIPerf{Configs: []AIPerfConfig{{
				Name: "prefix",
				Args: []BenchArg{
					{Flag: "--endpoint-type", Values: []string{"chat"}},
					{Flag: "--streaming"},
					{Flag: "--num-prefix-prompts", Values: []string{"8"}},
					{Flag: "--extra-inputs", Values: []string{"ignore_eos:true", "max_tokens:350"}},
					{Flag: "--sweep-type", Values: []string{"zip"}},
					{Flag: "--concurrency", Values: []string{"16,24"}},
					{Flag: "--random-seed", Values: []string{"42"}},
				},
				Assertions: []Assertion{{Metric: "request_throughput", Min: ptr(1.0)}, {Metric: "time_to_first_token_p99_ms", Max: ptr(900.0)}},
				Regression: &Regression{Nights: 30, MaxMissing: 25, Metrics: []RegressionMetric{{Metric: "output_token_throughput", HigherIsBetter: true, MaxDropPct: 5}}},
			}}},
		},
		{
			name: "runner-owned, duplicate and unknown keys",
			src: `  configs:
    - name: x
      args: {url: "http://x", Model: m, output_artifact_dir: d, concurrency: 1, --concurrency: 2, mode: -rf}
      assertions: {ttft_p99: {max: 1}}
    - name: x
`,
			errs: []string{
				`r.yaml:8:14: aiperf.configs[0].args: --url cannot be set here: the runner points aiperf at its server`,
				`r.yaml:8:31: aiperf.configs[0].args key "Model" is not a flag name`,
				`r.yaml:8:41: aiperf.configs[0].args: --output-artifact-dir cannot be set here: the runner writes aiperf's artifacts to results/<recipe>/aiperf-<name>/`,
				`r.yaml:8:81: aiperf.configs[0].args: "--concurrency" is --concurrency again (first at line 8)`,
				`r.yaml:8:105: aiperf.configs[0].args.mode: "-rf" starts with '-': aiperf would read it as a flag`,
				`r.yaml:9:20: aiperf.configs[0].assertions: the runner reads no "ttft_p99" from aiperf's export`,
				`r.yaml:10:7: aiperf config name "x" is used twice (first at line 7); it names a results folder`,
			},
		},
		{
			// What would move the export the runner reads, multiply it,
			// run a tokenizer's code, or sweep points it does not plan.
			name: "flags that leave a planned point unjudged",
			src: `  configs:
    - name: x
      args: {profile-export-file: p, num-profile-runs: 3, tokenizer-trust-remote-code: true, request-rate: "1,2", sweep-type: zip, concurrency: "1,2", request-count: "1,2,3"}
`,
			errs: []string{
				`r.yaml:7:7: aiperf.configs[0].args: --request-rate "1,2" is a list aiperf would sweep; the runner plans and judges sweeps over --concurrency and --request-count only`,
				`r.yaml:7:7: aiperf.configs[0].args: aiperf config x: --sweep-type zip needs lists of the same length, got 2 and 3`,
				`r.yaml:8:14: aiperf.configs[0].args: --profile-export-file cannot be set here: the runner reads aiperf's export as profile_export_aiperf.json`,
				`r.yaml:8:38: aiperf.configs[0].args: --num-profile-runs cannot be set here: the runner judges one run per point, one export each; repeat with more requests instead`,
				`r.yaml:8:59: aiperf.configs[0].args: --tokenizer-trust-remote-code cannot be set here: the runner passes the recipe's model as the tokenizer and runs no tokenizer repository's code in aiperf`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _ := parseWithProblems(t, head+tt.src, profiles, tt.errs)
			if r != nil {
				if diff := cmp.Diff(r.AIPerf, tt.want); diff != "" {
					t.Errorf("AIPerf diff (-got +want):\n%s", diff)
				}
			}
		})
	}
}

func ptr(f float64) *float64 { return &f }

func TestEngineReadyTimeout(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	base := "name: s\ngpu: H200\nnum_gpus: 1\nvllm_bench:\n  configs: [{name: c, input_len: 8, output_len: 8, num_prompts: 4, max_concurrency: 2}]\n"
	tests := []struct {
		name     string
		src      string
		secs     int
		fromEnv  bool
		problems []string
	}{
		{name: "unset: the start-up wait", src: "vllm: {model: o/m, startup_timeout_s: 1200}\n", secs: 1200},
		{name: "the recipe's shorter limit wins", src: "vllm: {model: o/m, env: {VLLM_ENGINE_READY_TIMEOUT_S: 1800}}\n", secs: 1800, fromEnv: true},
		{name: "a limit beyond the runner's wait is named", src: "vllm: {model: o/m, env: {VLLM_ENGINE_READY_TIMEOUT_S: 5400}}\n", secs: 5400, fromEnv: true,
			problems: []string{"r.yaml:6:55: warning: vllm.env.VLLM_ENGINE_READY_TIMEOUT_S (5400 s) is longer than the runner waits for the server (vllm.startup_timeout_s 3600 s): the runner gives up first; set startup_timeout_s to 5400"}},
		{name: "both long", src: "vllm: {model: o/m, startup_timeout_s: 5400, env: {VLLM_ENGINE_READY_TIMEOUT_S: 5400}}\n", secs: 5400, fromEnv: true},
		{name: "not a number", src: "vllm: {model: o/m, env: {VLLM_ENGINE_READY_TIMEOUT_S: 30m}}\n",
			problems: []string{`r.yaml:6:55: vllm.env.VLLM_ENGINE_READY_TIMEOUT_S "30m": vLLM reads it as a whole number of seconds, at least 1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _ := parseWithProblems(t, base+tt.src, profiles, tt.problems)
			if r == nil {
				return
			}
			secs, fromEnv := r.EngineReadyTimeout()
			if secs != tt.secs || fromEnv != tt.fromEnv {
				t.Errorf("EngineReadyTimeout() = %d, %v; want %d, %v", secs, fromEnv, tt.secs, tt.fromEnv)
			}
		})
	}
}

// TestRealTextDataset: a bench config may run on real prompts with a
// fixed output length (the speculative decoding bench); it sets no
// input_len, and the runner owns vLLM's dataset flags.
func TestRealTextDataset(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	head := "name: s\ngpu: H200\nnum_gpus: 1\nvllm: {model: o/m}\nvllm_bench:\n  configs:\n"
	tests := []struct {
		name     string
		config   string
		dataset  string
		problems []string
	}{
		{name: "mt-bench", config: "    - {name: c, dataset: mt-bench, output_len: 256, num_prompts: 80, max_concurrency: 4}\n", dataset: "mt-bench"},
		{name: "instructcoder", config: "    - {name: c, dataset: instructcoder, output_len: 200, num_prompts: 80, max_concurrency: 4}\n", dataset: "instructcoder"},
		{name: "input_len has no meaning there", config: "    - {name: c, dataset: mt-bench, input_len: 8, output_len: 256, num_prompts: 80, max_concurrency: 4}\n",
			problems: []string{"r.yaml:7:47: vllm_bench.configs[0].input_len: mt-bench's prompts have their own lengths; remove input_len (output_len still fixes every answer's length)"}},
		{name: "the output length stays required", config: "    - {name: c, dataset: mt-bench, num_prompts: 80, max_concurrency: 4}\n",
			problems: []string{"r.yaml:7:7: vllm_bench.configs[0] needs output_len"}},
		{name: "random still needs input_len", config: "    - {name: c, output_len: 8, num_prompts: 4, max_concurrency: 2}\n",
			problems: []string{"r.yaml:7:7: vllm_bench.configs[0] needs input_len"}},
		{name: "an unknown dataset names the real-text ones", config: "    - {name: c, dataset: sharegpt, output_len: 8, num_prompts: 4, max_concurrency: 2}\n",
			problems: []string{"r.yaml:7:7: vllm_bench.configs[0] needs input_len", `r.yaml:7:26: dataset "sharegpt" is not supported; use random (fixed input/output lengths with --ignore-eos make nights comparable) or real text with a fixed output length (instructcoder, mt-bench)`}},
		{name: "vLLM's dataset flags are the runner's", config: "    - {name: c, dataset: mt-bench, output_len: 8, num_prompts: 4, max_concurrency: 2, args: {hf_output_len: 64}}\n",
			problems: []string{"r.yaml:7:94: vllm_bench.configs[0].args: --hf-output-len cannot be set here: set output_len on the config"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _ := parseWithProblems(t, head+tt.config, profiles, tt.problems)
			if r == nil {
				return
			}
			res, err := Resolve(r, profiles, mapEnv(nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := res.BenchRuns[0].Dataset; got != tt.dataset {
				t.Errorf("BenchRuns[0].Dataset = %q, want %q", got, tt.dataset)
			}
		})
	}
}
