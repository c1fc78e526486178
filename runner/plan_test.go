package main

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/tools"
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
		{"xpu_docker", []string{xpuRecipe, "--port", "9100"}},
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
// driverHead is how the bench driver's source begins.
const driverHead = "\"\"\"Run every `vllm bench serve` of a job in one Python process.\n"

func TestPlanContents(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HF_TOKEN": "secret-value-123", "BUILDKITE_JOB_ID": "job-1"}
	lmKey := tools.Locked(false).Key()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string // on top of env
		want    []string          // in this order
		wantNot []string
	}{
		{
			name: "seed recipe, native: tools before the server, loopback, engine timeout, env per process",
			args: []string{seedRecipe},
			env:  map[string]string{"BUILDKITE_AGENT_ACCESS_TOKEN": "agent-token-1", "BUILDKITE_API_TOKEN": "api-token-1", "BENCHKITE_INGEST_TOKEN": "ingest-token-1"},
			want: []string{
				"working directory: " + cwdToken + "\n",
				"every process gets only the environment listed under it\n",
				"1. python3 -c 'import venv, ensurepip'\n",
				"2. python3 -m venv " + cwdToken + "/.benchkite/tools/.venvs/" + lmKey + ".1\n",
				"     env PIP_CONFIG_FILE=/dev/null\n",
				"3. " + cwdToken + "/.benchkite/tools/.venvs/" + lmKey + ".1/bin/python -m pip install --disable-pip-version-check --no-input --progress-bar off --require-hashes --no-deps -r " + cwdToken + "/.benchkite/tools/.venvs/" + lmKey + ".1/benchkite-lock.txt\n",
				// pytest in the server's Python, before the server starts.
				"5. python3 -c 'import sys\nfrom importlib.metadata import version, PackageNotFoundError\ntry:\n    import pytest\n",
				"' colorama exceptiongroup iniconfig packaging pluggy pygments pytest tomli typing-extensions\n",
				"     env PIP_BREAK_SYSTEM_PACKAGES=1\n",
				"6. python3 -m pip install --disable-pip-version-check --no-input --progress-bar off --require-hashes --no-deps -r /dev/stdin\n",
				"     # only when the line above finds no importable pytest",
				"7. vllm serve MiniMaxAI/MiniMax-M3-MXFP8 --port 38299 --tensor-parallel-size 8 ",
				"--speculative-config.num_speculative_tokens 3 --host 127.0.0.1\n",
				"     env HF_TOKEN=***\n",
				"     env VLLM_ENGINE_READY_TIMEOUT_S=3600\n",
				"     env VLLM_USE_BREAKABLE_CUDAGRAPH=0\n",
				// One Python process runs every bench run, each argv on its stdin.
				"8. python3 -c '" + driverHead,
				"     # the bench driver: ",
				"9. vllm bench serve --backend openai --base-url http://127.0.0.1:38299 ",
				" --ignore-eos --num-prompts 512 --max-concurrency 128 --temperature 0 --trust-remote-code --percentile-metrics ttft,tpot,itl,e2el ",
				"--result-filename " + cwdToken + "/results/minimax_m3-mi355x/bench/bench-8k-in-1k-out-conc-128.json\n",
				"     # this and the bench runs after it go to the bench driver above; each starts as its own process only where the driver exits 3",
				"10. " + cwdToken + "/.benchkite/tools/" + lmKey + "/bin/lm_eval --model local-completions --model_args model=MiniMaxAI/MiniMax-M3-MXFP8,base_url=http://127.0.0.1:38299/v1/completions,tokenized_requests=False,tokenizer_backend=None,timeout=6000,num_concurrent=64,max_length=40960,max_gen_toks=32768 --tasks gsm8k --num_fewshot 5 ",
				"     env VIRTUAL_ENV=" + cwdToken + "/.benchkite/tools/" + lmKey + "\n",
				"11. buildkite-agent artifact upload 'results/minimax_m3-mi355x/**/*'\n",
				"     env BUILDKITE_AGENT_ACCESS_TOKEN=***\n",
				"12. buildkite-agent annotate --context minimax_m3-mi355x --style",
			},
			wantNot: []string{"secret-value-123", "agent-token-1", "api-token-1", "ingest-token-1", "BUILDKITE_API_TOKEN", "BENCHKITE_INGEST_TOKEN", "docker"},
		},
		{
			name:    "bench only installs no tools and drops lm_eval",
			args:    []string{seedRecipe, "--bench-only"},
			want:    []string{"1. python3 -c 'import sys", "import pytest", "2. python3 -m pip install", "-r /dev/stdin\n", "3. vllm serve", "4. python3 -c '" + driverHead, "5. vllm bench serve", ". buildkite-agent artifact upload"},
			wantNot: []string{"lm_eval", "venv", "benchkite-lock"},
		},
		{
			name: "tools from PATH install nothing",
			args: []string{seedRecipe, "--tools", "path"},
			// Nothing installed; the versions that will run are asked for.
			want:    []string{"1. python3 -c 'import sys", "lm-eval\n", "2. python3 -c 'import sys", "import pytest", "3. python3 -m pip install", "-r /dev/stdin\n", "4. vllm serve", "5. python3 -c '" + driverHead, "6. vllm bench serve", "7. lm_eval --model local-completions"},
			wantNot: []string{"benchkite-lock", "VIRTUAL_ENV"},
		},
		{
			name:    "attached to a running server: nothing to start or stop",
			args:    []string{dockerRecipe, "--base-url", "http://10.0.0.5:9000/"},
			want:    []string{"5. python3 -c '" + driverHead, "6. vllm bench serve --backend openai --base-url http://10.0.0.5:9000 --model", "base_url=http://10.0.0.5:9000/v1/completions,"},
			wantNot: []string{"docker", "vllm serve"},
		},
		{
			name: "grace rounds to whole seconds as teardown does",
			args: []string{dockerRecipe, "--grace", "1500ms"},
			want: []string{"docker stop -t 2 benchkite-gpt_oss_120b-h200-job-1\n"},
		},
		{
			name: "H200 runs docker, the bench inside the container; pytest before the server, pip's index by name",
			args: []string{dockerRecipe},
			env:  map[string]string{"PIP_INDEX_URL": "https://mirror.example/simple"},
			want: []string{
				"docker ps -aq --no-trunc --filter label=benchkite.job\n",
				". docker run -d --rm --name benchkite-gpt_oss_120b-h200-job-1 --label benchkite.job=job-1 --label benchkite.recipe=gpt_oss_120b-h200 --label 'benchkite.runner=<pid-namespace>/<pid>/<start-time>' --ipc=host --ulimit=nofile=65536:65536 --gpus=all -e VLLM_DEEP_GEMM_WARMUP=skip -e HF_HOME=/mnt/shared/hf-models -e VLLM_ENGINE_READY_TIMEOUT_S=3600 -e HF_TOKEN -v /mnt/shared/hf-models:/mnt/shared/hf-models ",
				"-p 127.0.0.1:38299:38299 --entrypoint sh vllm/vllm-openai:nightly -c 'f=$1; shift\n",
				"' benchkite-start /tmp/benchkite-gpt_oss_120b-h200-job-1.start vllm serve openai/gpt-oss-120b --port 38299 ",
				"--host 0.0.0.0\n",
				". docker logs -f benchkite-gpt_oss_120b-h200-job-1\n",
				". docker exec benchkite-gpt_oss_120b-h200-job-1 python3 -c 'import sys\n",
				"' colorama exceptiongroup iniconfig packaging pluggy pygments pytest tomli typing-extensions\n",
				". docker exec -i -e PIP_CONFIG_FILE=/dev/null -e PIP_BREAK_SYSTEM_PACKAGES=1 -e PIP_INDEX_URL benchkite-gpt_oss_120b-h200-job-1 python3 -m pip install --disable-pip-version-check --no-input --progress-bar off --require-hashes --no-deps -r /dev/stdin\n",
				"     env PIP_INDEX_URL=https://mirror.example/simple\n",
				". docker exec benchkite-gpt_oss_120b-h200-job-1 touch /tmp/benchkite-gpt_oss_120b-h200-job-1.start\n",
				". docker inspect -f '{{.State.Running}}' benchkite-gpt_oss_120b-h200-job-1\n",
				// The bench driver runs in the container, as the bench would.
				". docker exec -i -e HF_TOKEN benchkite-gpt_oss_120b-h200-job-1 python3 -c '" + driverHead,
				". docker exec -e HF_TOKEN benchkite-gpt_oss_120b-h200-job-1 vllm bench serve ",
				"--num-warmups 128 --save-result --result-filename " + cwdToken + "/results/gpt_oss_120b-h200/bench/bench-8k-in-1k-out-run-1.json\n",
				"-run-2.json\n", "-run-3.json\n",
				". " + cwdToken + "/.benchkite/tools/" + lmKey + "/bin/lm_eval ",
				". docker stop -t 10 benchkite-gpt_oss_120b-h200-job-1\n",
				". docker rm -f benchkite-gpt_oss_120b-h200-job-1\n",
				". buildkite-agent artifact upload",
			},
			wantNot: []string{"secret-value-123", "--trust-remote-code", "-p 8000:8000"},
		},
		{
			// The port is free on the host (no --port), the serve args reach
			// bash as positional parameters, never as script text.
			name: "XPU: host network, privileged, bashrc, ZE_AFFINITY_MASK by name, the recipe's start-up time",
			args: []string{xpuRecipe},
			env:  map[string]string{"ZE_AFFINITY_MASK": "0.1"},
			want: []string{
				". docker run -d --rm --name benchkite-llama-xpu-job-1 --label benchkite.job=job-1 --label benchkite.recipe=llama-xpu --label 'benchkite.runner=<pid-namespace>/<pid>/<start-time>' --ipc=host --ulimit=nofile=65536:65536 --device=/dev/dri:/dev/dri --network=host --privileged -e HF_HOME=/data/huggingface -e VLLM_ENGINE_READY_TIMEOUT_S=1800 -e HF_TOKEN -v /data/huggingface:/data/huggingface ",
				" -e ZE_AFFINITY_MASK --entrypoint sh vllm/vllm-openai-xpu:nightly -c 'f=$1; shift\n",
				"' benchkite-start /tmp/benchkite-llama-xpu-job-1.start bash -ic 'exec vllm serve \"$@\"' vllm-serve meta-llama/Llama-3.1-8B-Instruct --port ",
				" --max-model-len 8192 --chat-template '$(touch /tmp/pwned)' --host 127.0.0.1\n",
				"     env ZE_AFFINITY_MASK=0.1\n",
			},
			wantNot: []string{"-p 127.0.0.1", "--port 8000", "0.0.0.0"},
		},
		{
			// As every generated GPU step runs it: the bench's alarm reads
			// the recipe's past nights from the history step (looking at its
			// state when the file is not there yet) and may re-run the
			// bench; the gates then read the twin's (baseline_from); the
			// ingest token is the agent's secret.
			name: "history step and ingest: the agent's downloads, state looks, re-runs and secret",
			args: []string{seedRecipe, "--history-step", "history", "--ingest-url", "https://dash.example/ingest", "--ingest-nightly-only"},
			want: []string{
				"9. vllm bench serve ", "bench-8k-in-1k-out-conc-128.json\n",
				"10. buildkite-agent artifact download results/_history/recipes/minimax_m3-mi355x.json . --step history\n",
				"     # minimax_m3-mi355x's past nights, when first asked for\n",
				"     env BUILDKITE_AGENT_ACCESS_TOKEN=***\n",
				"11. buildkite-agent step get state --step history\n",
				"     # only when the line above finds no file",
				"12. vllm bench serve ", "bench-8k-in-1k-out-conc-128-rerun-1.json\n",
				"     # only when the regression gate raises the alarm on the repetitions above\n",
				"13. vllm bench serve ", "bench-8k-in-1k-out-conc-128-rerun-2.json\n",
				"14. ", "/bin/lm_eval --model",
				"15. buildkite-agent artifact download results/_history/recipes/minimax_m3-nospec-mi355x.json . --step history\n",
				"     # minimax_m3-nospec-mi355x's past nights, when first asked for\n",
				"16. buildkite-agent step get state --step history\n",
				"17. buildkite-agent artifact upload",
				"18. buildkite-agent annotate --context minimax_m3-mi355x",
				"19. buildkite-agent secret get BENCHKITE_INGEST_TOKEN\n",
				"     # only for a scheduled night that did not fail and ran its own server (--ingest-nightly-only)\n",
				"     env BUILDKITE_AGENT_ACCESS_TOKEN=***\n",
			},
			env:     map[string]string{"BUILDKITE_AGENT_ACCESS_TOKEN": "agent-token-1"},
			wantNot: []string{"agent-token-1"},
		},
		{
			name:    "perf-eval's sink without a token in the environment: its secret",
			args:    []string{seedRecipe, "--ingest-format", "perf-eval"},
			want:    []string{". buildkite-agent annotate --context minimax_m3-mi355x", ". buildkite-agent secret get INGEST_BEARER_TOKEN\n"},
			wantNot: []string{"artifact download", "step get", "secret get BENCHKITE_INGEST_TOKEN"},
		},
		{
			name:    "an ingest token in the environment: no secret to read",
			args:    []string{seedRecipe, "--ingest-url", "https://dash.example/ingest"},
			env:     map[string]string{"BENCHKITE_INGEST_TOKEN": "ingest-token-1"},
			wantNot: []string{"secret get", "artifact download", "step get", "ingest-token-1"},
		},
		{
			// 20000 + cksum("job-1") % 40000, as perf-eval's jobs pick it.
			name:    "docker: the port comes from the job id",
			args:    []string{dockerRecipe},
			want:    []string{" -p 127.0.0.1:38299:38299 ", "vllm serve openai/gpt-oss-120b --port 38299 ", "vllm bench serve --backend openai --base-url http://127.0.0.1:38299 "},
			wantNot: []string{"8000"},
		},
		{
			name:    "VLLM_PORT overrides the job's port",
			args:    []string{dockerRecipe},
			env:     map[string]string{"VLLM_PORT": "23456"},
			want:    []string{" -p 127.0.0.1:23456:23456 ", "--port 23456 ", "--base-url http://127.0.0.1:23456 "},
			wantNot: []string{"38299"},
		},
		{
			name:    "native: VLLM_PORT overrides the job's port",
			args:    []string{seedRecipe},
			env:     map[string]string{"VLLM_PORT": "23456"},
			want:    []string{"vllm serve MiniMaxAI/MiniMax-M3-MXFP8 --port 23456 ", "--base-url http://127.0.0.1:23456 "},
			wantNot: []string{"38299"},
		},
		{
			name:    "--port wins over VLLM_PORT",
			args:    []string{dockerRecipe, "--port", "9000"},
			env:     map[string]string{"VLLM_PORT": "23456"},
			want:    []string{" -p 127.0.0.1:9000:9000 ", "--port 9000 "},
			wantNot: []string{"23456", "38299"},
		},
		{
			name:    "outside a Buildkite job: 8000",
			args:    []string{dockerRecipe},
			env:     map[string]string{"BUILDKITE_JOB_ID": ""},
			want:    []string{" -p 127.0.0.1:8000:8000 ", "--port 8000 "},
			wantNot: []string{"38299"},
		},
		{
			// The recipe sets vLLM's engine limit itself: that value, once,
			// while the runner still waits its own 3600 s.
			name:    "docker: the recipe's VLLM_ENGINE_READY_TIMEOUT_S wins",
			args:    []string{"testdata/recipes/engine_ready_h200.yaml"},
			want:    []string{" -e VLLM_ENGINE_READY_TIMEOUT_S=1800 -e HF_HOME=/mnt/shared/hf-models -e HF_TOKEN ", "--backend openai "},
			wantNot: []string{"VLLM_ENGINE_READY_TIMEOUT_S=3600"},
		},
		{
			name:    "native: the recipe's VLLM_ENGINE_READY_TIMEOUT_S wins",
			args:    []string{"testdata/recipes/engine_ready_mi300x.yaml"},
			want:    []string{"vllm serve Qwen/Qwen3-8B", "     env VLLM_ENGINE_READY_TIMEOUT_S=1800\n"},
			wantNot: []string{"VLLM_ENGINE_READY_TIMEOUT_S=3600"},
		},
		{
			name: "aiperf natively: its own venv, then one run per config with the recipe's flags after the runner's",
			args: []string{"testdata/recipes/aiperf_mi300x.yaml"},
			want: []string{
				"vllm serve Qwen/Qwen3-8B",
				"python3 -m venv " + cwdToken + "/.benchkite/tools/.venvs/aiperf-",
				"--require-hashes --no-deps -r " + cwdToken + "/.benchkite/tools/.venvs/aiperf-",
				"' aiperf==0.13.0\n",
				cwdToken + "/.benchkite/tools/aiperf-", "/bin/aiperf profile --model Qwen/Qwen3-8B --tokenizer Qwen/Qwen3-8B --url http://127.0.0.1:38299 --output-artifact-dir " + cwdToken + "/results/aiperf-mi300x/aiperf-prefix --endpoint-type chat --streaming --extra-inputs ignore_eos:true --extra-inputs max_tokens:350 --sweep-type zip --concurrency 16,24 --request-count 80,120\n",
				"     env VIRTUAL_ENV=" + cwdToken + "/.benchkite/tools/aiperf-",
			},
			wantNot: []string{"lm-eval", "lm_eval"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := maps.Clone(env)
			maps.Copy(e, tt.env)
			stdout, stderr, code := runPlanCmd(t, e, tt.args...)
			if code != 0 {
				t.Fatalf("plan exit %d: %s", code, stderr)
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
	if !strings.Contains(stdout, "every process gets only the environment listed under it\n") {
		t.Errorf("plan does not say what the processes get:\n%s", stdout)
	}
}

// TestPlanReferenceBFCL: every reference recipe with a bfcl block plans one
// driver run per category, with its settings, after lm_eval and on the
// same server.
func TestPlanReferenceBFCL(t *testing.T) {
	t.Parallel()
	dir := testutil.ReferenceDir(t, "perf-eval/workloads")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "\nbfcl:") {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runPlanCmd(t, map[string]string{"BUILDKITE_JOB_ID": "job-1"}, f)
			if code != 0 {
				t.Fatalf("plan exit %d: %s", code, stderr)
			}
			drivers := strings.Count(stdout, "/bfcl/bfcl_driver.py ")
			notes := strings.Count(stdout, "     # bfcl_")
			if drivers == 0 || drivers != notes {
				t.Errorf("plan has %d driver runs and %d settings notes, want one note per run:\n%s", drivers, notes, stdout)
			}
			if strings.Index(stdout, "bfcl_driver.py") < strings.Index(stdout, "lm_eval --model") {
				t.Errorf("bfcl runs before lm_eval:\n%s", stdout)
			}
			if !strings.Contains(stdout, " bfcl-eval==2026.3.23 ") {
				t.Errorf("the tools install lacks the pinned bfcl-eval:\n%s", stdout)
			}
		})
	}
	if n != 10 {
		t.Errorf("found %d reference recipes with a bfcl block, want 10", n)
	}
}

// TestPlanBadVLLMPort: a VLLM_PORT that is no port is a usage error that
// names it, and nothing is planned.
func TestPlanBadVLLMPort(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"abc", "0", "70000"} {
		stdout, stderr, code := runPlanCmd(t, map[string]string{"BUILDKITE_JOB_ID": "job-1", "VLLM_PORT": v}, dockerRecipe)
		if code != 2 || stdout != "" || !strings.Contains(stderr, `VLLM_PORT "`+v+`" is not a port (1-65535)`) {
			t.Errorf("VLLM_PORT=%s: exit %d, stdout %q, stderr %q; want 2, nothing, the variable named", v, code, stdout, stderr)
		}
	}
}

// TestPlanIngestFormat: perf-eval is the one other ingest format; any
// other value is a usage error that names it.
func TestPlanIngestFormat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		format string
		code   int
	}{{"perf-eval", 0}, {"benchkite", 0}, {"perfeval", 2}} {
		_, stderr, code := runPlanCmd(t, map[string]string{"BUILDKITE_JOB_ID": "job-1", "BENCHKITE_INGEST_FORMAT": tt.format}, dockerRecipe)
		if code != tt.code || (code != 0 && !strings.Contains(stderr, `--ingest-format "perfeval": use perf-eval, or leave it unset`)) {
			t.Errorf("BENCHKITE_INGEST_FORMAT=%s: exit %d, stderr %q; want %d", tt.format, code, stderr, tt.code)
		}
	}
}
