package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
)

// cwdToken stands for the test's working directory in golden plans.
const cwdToken = "$CWD"

// runPlanCmd runs `runner plan` as main would, and returns stdout with the
// working directory replaced, stderr and the exit code.
func runPlanCmd(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut strings.Builder
	code = run(context.Background(), append([]string{"plan"}, args...), cliutil.Streams{Stdout: &out, Stderr: &errOut}, mapGetenv(env), environOf(env))
	cwd, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(out.String(), cwd, cwdToken), errOut.String(), code
}

func TestPlanGolden(t *testing.T) {
	t.Parallel()
	const secret = "secret-value-123"
	env := map[string]string{
		"HF_TOKEN":         secret,
		"BUILDKITE_JOB_ID": "0190f3a2-aaaa-bbbb-cccc-ddddeeeeffff", // names the container
		"PATH":             "/usr/bin",
	}
	tests := []struct {
		name string
		args []string
	}{
		{"seed", []string{seedRecipe}},
		{"seed_bench_only", []string{seedRecipe, "--bench-only"}},
		{"seed_attached", []string{"--base-url", "http://10.0.0.5:9000/", seedRecipe}},
		{"h200_docker", []string{dockerRecipe, "--port", "9000", "--grace", "30s"}},
		{"sweep_results_dir", []string{sweepRecipe, "--results", "out/sweep"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runPlanCmd(t, env, tt.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("plan %v = exit %d, stderr %q; want 0 and nothing", tt.args, code, stderr)
			}
			if strings.Contains(stdout, secret) {
				t.Errorf("plan shows the HF_TOKEN value:\n%s", stdout)
			}
			if !strings.Contains(stdout, "HF_TOKEN=***") {
				t.Errorf("plan does not say HF_TOKEN is passed on, masked:\n%s", stdout)
			}
			checkGolden(t, "plan/"+tt.name+".txt", []byte(stdout))
		})
	}
}

// TestPlanContents says what the golden files must show, so that an
// -update cannot quietly accept a wrong plan.
func TestPlanContents(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HF_TOKEN": "secret-value-123", "BUILDKITE_JOB_ID": "job-1"}
	tests := []struct {
		name    string
		args    []string
		want    []string // in this order
		wantNot []string
	}{
		{
			name: "seed recipe, native",
			args: []string{seedRecipe},
			want: []string{
				"working directory: " + cwdToken + "\n",
				"including HF_TOKEN=***\n",
				"1. vllm serve MiniMaxAI/MiniMax-M3-MXFP8 --port 8000 --tensor-parallel-size 8 ",
				"--speculative-config.num_speculative_tokens 3\n",
				"     env VLLM_USE_BREAKABLE_CUDAGRAPH=0\n",
				"2. vllm bench serve --backend openai --base-url http://127.0.0.1:8000 ",
				" --ignore-eos --num-prompts 512 --max-concurrency 128 --trust-remote-code --percentile-metrics ttft,tpot,itl,e2el ",
				"--result-filename results/minimax_m3-mi355x/bench-8k-in-1k-out-conc-128.json\n",
				"3. lm_eval --model local-completions --model_args model=MiniMaxAI/MiniMax-M3-MXFP8,base_url=http://127.0.0.1:8000/v1/completions,tokenized_requests=False,tokenizer_backend=None,timeout=6000,num_concurrent=64,max_length=40960,max_gen_toks=32768 --tasks gsm8k --num_fewshot 5 ",
				"4. buildkite-agent artifact upload 'results/minimax_m3-mi355x/**/*'\n",
				"5. buildkite-agent annotate --context minimax_m3-mi355x --style",
			},
			wantNot: []string{"secret-value-123", "docker"},
		},
		{
			name:    "bench only drops lm_eval",
			args:    []string{seedRecipe, "--bench-only"},
			want:    []string{"2. vllm bench serve", "3. buildkite-agent artifact upload"},
			wantNot: []string{"lm_eval"},
		},
		{
			name:    "attached to a running server: nothing to start or stop",
			args:    []string{dockerRecipe, "--base-url", "http://10.0.0.5:9000/"},
			want:    []string{"1. vllm bench serve --backend openai --base-url http://10.0.0.5:9000 --model", "base_url=http://10.0.0.5:9000/v1/completions,"},
			wantNot: []string{"docker", "vllm serve", "     env "},
		},
		{
			name: "grace rounds to whole seconds as teardown does",
			args: []string{dockerRecipe, "--grace", "1500ms"},
			want: []string{"docker stop -t 2 benchkite-gpt_oss_120b-h200-job-1\n"},
		},
		{
			name: "H200 runs docker",
			args: []string{dockerRecipe},
			want: []string{
				"1. docker ps -aq --filter label=benchkite.recipe=gpt_oss_120b-h200\n",
				"2. docker run -d --rm --name benchkite-gpt_oss_120b-h200-job-1 --ipc=host --label benchkite.job=job-1 --label benchkite.recipe=gpt_oss_120b-h200 --gpus=all -e VLLM_DEEP_GEMM_WARMUP=skip -e HF_HOME=/mnt/shared/hf-models -e HF_TOKEN -v /mnt/shared/hf-models:/mnt/shared/hf-models -p 8000:8000 vllm/vllm-openai:nightly openai/gpt-oss-120b --port 8000 ",
				"3. docker logs -f benchkite-gpt_oss_120b-h200-job-1\n",
				"4. docker inspect -f '{{.State.Running}}' benchkite-gpt_oss_120b-h200-job-1\n",
				"--num-warmups 128 --save-result --result-filename results/gpt_oss_120b-h200/bench-8k-in-1k-out-run-1.json\n",
				"-run-2.json\n", "-run-3.json\n",
				"8. lm_eval ",
				"9. docker stop -t 10 benchkite-gpt_oss_120b-h200-job-1\n",
				"10. docker rm -f benchkite-gpt_oss_120b-h200-job-1\n",
				"11. buildkite-agent artifact upload",
			},
			wantNot: []string{"secret-value-123", "--trust-remote-code", "     env "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, _, code := runPlanCmd(t, env, tt.args...)
			if code != 0 {
				t.Fatalf("plan exit %d", code)
			}
			rest := stdout
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("plan lacks %q after what came before; plan:\n%s", w, stdout)
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tt.wantNot {
				if strings.Contains(stdout, w) {
					t.Errorf("plan contains %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestPlanWithoutToken: no HF_TOKEN in the environment, so docker is not
// told to pass one and nothing claims a secret.
func TestPlanWithoutToken(t *testing.T) {
	t.Parallel()
	stdout, _, code := runPlanCmd(t, map[string]string{"BUILDKITE_JOB_ID": "job-1"}, dockerRecipe)
	if code != 0 {
		t.Fatalf("plan exit %d", code)
	}
	if strings.Contains(stdout, "HF_TOKEN") {
		t.Errorf("plan mentions HF_TOKEN though it is unset:\n%s", stdout)
	}
	if !strings.Contains(stdout, "every process inherits the job environment\n") {
		t.Errorf("plan does not say what the processes inherit:\n%s", stdout)
	}
}
