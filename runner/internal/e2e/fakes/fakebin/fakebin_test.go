package fakebin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

var listening = regexp.MustCompile(`Starting vLLM server on (http://\S+)`)

// serve starts the vllm stand-in and returns its URL once it listens.
func serve(t *testing.T, bin string, env []string, args ...string) (*exec.Cmd, string, <-chan error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, VLLM), append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case url := <-urls:
		return cmd, url, exited
	case err := <-exited:
		t.Fatalf("vllm serve exited early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("vllm serve did not start listening")
	}
	return nil, "", nil
}

func runTool(t *testing.T, ctx context.Context, bin, name, stdin string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestStandInsEndToEnd(t *testing.T) {
	bin := Build(t)
	if again := Build(t); again != bin {
		t.Errorf("second Build = %q, want the same directory %q", again, bin)
	}
	work := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	cmd, url, exited := serve(t, bin, []string{"FAKE_VLLM_ACCURACY=0.9"},
		"org/Model-1B", "--port", "0", "--speculative-config.num_speculative_tokens", "2", "--trust-remote-code")
	resp, err := http.Get(url + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/health = %v, %v", resp, err)
	}
	resp.Body.Close()

	out, err := runTool(t, ctx, bin, VLLM, "", nil, "bench", "serve", "--backend", "openai", "--base-url", url,
		"--model", "org/Model-1B", "--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "8",
		"--num-prompts", "8", "--max-concurrency", "2", "--ignore-eos", "--save-result",
		"--result-dir", work, "--result-filename", "bench.json")
	if err != nil {
		t.Fatalf("vllm bench serve: %v\n%s", err, out)
	}
	var bench map[string]any
	if data, err := os.ReadFile(filepath.Join(work, "bench.json")); err != nil || json.Unmarshal(data, &bench) != nil {
		t.Fatalf("bench result: %v", err)
	}
	if bench["completed"] != 8.0 || bench["spec_decode_num_drafts"] == nil {
		t.Errorf("bench result completed=%v spec drafts=%v; want 8 and spec-decode keys", bench["completed"], bench["spec_decode_num_drafts"])
	}

	out, err = runTool(t, ctx, bin, LMEval, "", nil, "--model", "local-completions",
		"--model_args", "model=org/Model-1B,base_url="+url+"/v1/completions,num_concurrent=4,tokenized_requests=False",
		"--tasks", "gsm8k", "--num_fewshot", "5", "--log_samples", "--output_path", filepath.Join(work, "eval"))
	if err != nil {
		t.Fatalf("lm_eval: %v\n%s", err, out)
	}
	if files, _ := filepath.Glob(filepath.Join(work, "eval", "org__Model-1B", "results_*.json")); len(files) != 1 {
		t.Errorf("lm_eval results files = %v", files)
	}

	log := filepath.Join(work, "agent.jsonl")
	out, err = runTool(t, ctx, bin, BuildkiteAgent, "# done", []string{"FAKE_AGENT_LOG=" + log, "FAKE_AGENT_ANNOTATIONS=" + filepath.Join(work, "ann")},
		"annotate", "--style", "success", "--context", "bench")
	if err != nil {
		t.Fatalf("buildkite-agent annotate: %v\n%s", err, out)
	}
	if data, _ := os.ReadFile(filepath.Join(work, "ann", "bench.md")); string(data) != "# done" {
		t.Errorf("annotation = %q", data)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("vllm serve after SIGTERM: %v, want a clean exit", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("vllm serve ignored SIGTERM")
	}
}

func TestIgnoreSIGTERMNeedsKill(t *testing.T) {
	bin := Build(t)
	cmd, _, exited := serve(t, bin, []string{"FAKE_VLLM_IGNORE_SIGTERM=1"}, "m", "--port", "0")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		t.Fatalf("vllm serve exited on SIGTERM (%v) despite FAKE_VLLM_IGNORE_SIGTERM", err)
	case <-time.After(time.Second):
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := <-exited
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("exit after SIGKILL = %v, want killed by SIGKILL", err)
	}
}
