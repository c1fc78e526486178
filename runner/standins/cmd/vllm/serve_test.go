package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/testutil"

	"github.com/google/go-cmp/cmp"
)

func TestParseServeArgs(t *testing.T) {
	t.Parallel()
	type parsed struct {
		Model       string
		Host        string
		Port        int
		Served      []string
		MaxModelLen int
		Spec        int
		Flags       int
	}
	tests := []struct {
		name    string
		args    []string
		want    parsed
		wantErr string
	}{
		{
			name: "recipe flags with dotted speculative config",
			args: strings.Fields("org/M --tensor-parallel-size 8 --enable-expert-parallel --trust-remote-code --max-model-len auto --speculative-config.method mtp --speculative-config.num_speculative_tokens 3 --port 9001"),
			want: parsed{Model: "org/M", Host: "127.0.0.1", Port: 9001, MaxModelLen: 32768, Spec: 3, Flags: 7},
		},
		{
			name: "underscore form with equals",
			args: strings.Fields("m --speculative_config.method=mtp --speculative_config.num_speculative_tokens=2 --kv-cache-dtype=fp8"),
			want: parsed{Model: "m", Host: "127.0.0.1", Port: 8000, Spec: 2, Flags: 3},
		},
		{
			name: "json speculative config and served names",
			args: []string{"m", "--speculative-config", `{"method": "eagle3", "num_speculative_tokens": 4}`, "--served-model-name", "a", "b", "--host", "localhost"},
			want: parsed{Model: "m", Host: "localhost", Port: 8000, Served: []string{"a", "b"}, Spec: 4, Flags: 3},
		},
		{
			name: "method alone drafts one token; human readable length",
			args: strings.Fields("--trust-remote-code m --speculative-config.method mtp --max-model-len 32K"),
			want: parsed{Model: "m", Host: "127.0.0.1", Port: 8000, MaxModelLen: 32768, Spec: 1, Flags: 3},
		},
		{name: "model flag", args: strings.Fields("--model m --max-model-len 1k"), want: parsed{Model: "m", Host: "127.0.0.1", Port: 8000, MaxModelLen: 1000, Flags: 2}},
		{name: "no model", args: strings.Fields("--port 1"), wantErr: "the following arguments are required: model_tag"},
		{name: "unknown flag refused as vLLM refuses it", args: strings.Fields("m --tensor-paralel-size 8"), wantErr: "unrecognized arguments: --tensor-paralel-size"},
		{name: "flag of an older vLLM refused", args: strings.Fields("m --num-speculative-tokens 3"), wantErr: "unrecognized arguments: --num-speculative-tokens"},
		{name: "unknown dotted head refused", args: strings.Fields("m --draft-config.method mtp"), wantErr: "unrecognized arguments: --draft-config"},
		{name: "ambiguous prefix refused", args: strings.Fields("m --max 8"), wantErr: "unrecognized arguments: --max"},
		{name: "unique prefix names its flag", args: strings.Fields("m --max-model-l 2k"), want: parsed{Model: "m", Host: "127.0.0.1", Port: 8000, MaxModelLen: 2000, Flags: 1}},
		{name: "two positionals", args: strings.Fields("a b"), wantErr: "unrecognized arguments: b"},
		{name: "bad port", args: strings.Fields("m --port x"), wantErr: "argument --port: invalid int value: 'x'"},
		{name: "bad json", args: []string{"m", "--speculative-config", "{"}, wantErr: "argument --speculative-config: invalid loads value: '{'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := parseServeArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("parseServeArgs(%q) error = %v, want %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseServeArgs(%q) error = %v", tt.args, err)
			}
			got := parsed{a.model, a.host, a.port, a.servedNames, a.maxModelLen, a.speculativeTokens(), len(a.flags)}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("parseServeArgs(%q) diff (-got +want):\n%s", tt.args, diff)
			}
		})
	}
}

func envFunc(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

var startedLine = regexp.MustCompile(`Starting vLLM server on (http://127\.0\.0\.1:\d+)`)

// startServe runs "vllm serve" in-process and waits for its URL.
func startServe(t *testing.T, ctx context.Context, args []string, env map[string]string) (url string, stdout, stderr *testutil.SyncBuffer, exit <-chan int) {
	t.Helper()
	stdout, stderr = &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	codes := make(chan int, 1)
	go func() { codes <- run(ctx, append([]string{"serve"}, args...), envFunc(env), stdout, stderr) }()
	deadline := time.After(10 * time.Second)
	for {
		if m := startedLine.FindStringSubmatch(stdout.String()); m != nil {
			return m[1], stdout, stderr, codes
		}
		select {
		case code := <-codes:
			t.Fatalf("vllm serve exited with %d before listening; stderr:\n%s", code, stderr.String())
		case <-deadline:
			t.Fatalf("vllm serve did not start; stdout:\n%s", stdout.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func waitExit(t *testing.T, exit <-chan int) int {
	t.Helper()
	select {
	case code := <-exit:
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("vllm serve did not exit")
		return -1
	}
}

func TestServeLifecycle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	argvLog := filepath.Join(t.TempDir(), "argv.jsonl")
	args := []string{"org/model", "--port", "0", "--served-model-name", "served", "--speculative-config.num_speculative_tokens", "2"}
	url, stdout, stderr, exit := startServe(t, ctx, args, map[string]string{envArgvLog: argvLog, envStartupDelay: "20ms"})

	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct{ ID, Root string }
	}
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 1 || models.Data[0].ID != "served" || models.Data[0].Root != "org/model" {
		t.Errorf("/v1/models = %+v, want served/org/model", models.Data)
	}
	resp, err = http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	metrics.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(metrics.String(), `vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="served",position="1"}`) {
		t.Errorf("/metrics lacks position 1 of 2 speculative tokens:\n%s", metrics.String())
	}

	cancel() // what SIGTERM does in main
	if code := waitExit(t, exit); code != 0 {
		t.Errorf("exit code after cancel = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{"non-default args: {'model_tag': 'org/model', 'port': 0,", `"GET /v1/models HTTP/1.1" 200 OK`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "Application shutdown complete.") {
		t.Errorf("stderr lacks the shutdown lines:\n%s", stderr.String())
	}
	data, err := os.ReadFile(argvLog)
	if err != nil {
		t.Fatal(err)
	}
	var argv []string
	if err := json.Unmarshal(bytes.TrimSpace(data), &argv); err != nil {
		t.Fatalf("argv log %q: %v", data, err)
	}
	if diff := cmp.Diff(argv, append([]string{"vllm", "serve"}, args...)); diff != "" {
		t.Errorf("argv log diff (-got +want):\n%s", diff)
	}
}

func TestServeFaults(t *testing.T) {
	t.Parallel()
	t.Run("exit during load", func(t *testing.T) {
		t.Parallel()
		var stdout, stderr testutil.SyncBuffer
		code := run(t.Context(), []string{"serve", "m", "--port", "0"}, envFunc(map[string]string{envExitDuringLoad: "3", envExitMessage: "boom: no GPU"}), &stdout, &stderr)
		if code != 3 || !strings.Contains(stderr.String(), "boom: no GPU") || !strings.Contains(stderr.String(), "See root cause above") {
			t.Errorf("exit = %d, stderr:\n%s\nwant 3 and the message", code, stderr.String())
		}
	})
	t.Run("dies after requests", func(t *testing.T) {
		t.Parallel()
		url, _, stderr, exit := startServe(t, t.Context(), []string{"m", "--port", "0"}, map[string]string{envDieAfterRequests: "1"})
		for range 2 {
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hi","max_tokens":2}`))
			if err == nil {
				resp.Body.Close()
			}
		}
		if code := waitExit(t, exit); code != 1 || !strings.Contains(stderr.String(), "EngineDeadError") {
			t.Errorf("exit = %d, stderr:\n%s\nwant 1 and EngineDeadError", code, stderr.String())
		}
	})
	t.Run("never healthy", func(t *testing.T) {
		t.Parallel()
		url, _, _, _ := startServe(t, t.Context(), []string{"m", "--port", "0"}, map[string]string{envNeverHealthy: "1"})
		resp, err := http.Get(url + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("/health = %d, want 503", resp.StatusCode)
		}
	})
	t.Run("bad knob", func(t *testing.T) {
		t.Parallel()
		var stdout, stderr testutil.SyncBuffer
		if code := run(t.Context(), []string{"serve", "m"}, envFunc(map[string]string{envAccuracy: "high"}), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "invalid FAKE_VLLM_ACCURACY") {
			t.Errorf("exit = %d, stderr %q; want 1 naming the knob", code, stderr.String())
		}
	})
}

func TestTopLevelCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args       []string
		wantCode   int
		wantOutput string
	}{
		{[]string{"--version"}, 0, "0.11.0\n"},
		{[]string{"frobnicate"}, 2, "vllm: error: argument subparser: invalid choice: 'frobnicate'"},
		{[]string{"bench", "latency"}, 2, "invalid choice: 'latency' (choose from 'serve')"},
		{[]string{"serve"}, 2, "vllm serve: error: the following arguments are required: model_tag"},
		{nil, 2, "usage: vllm"},
	}
	for _, tt := range tests {
		var stdout, stderr testutil.SyncBuffer
		code := run(t.Context(), tt.args, envFunc(nil), &stdout, &stderr)
		if code != tt.wantCode || !strings.Contains(stdout.String()+stderr.String(), tt.wantOutput) {
			t.Errorf("vllm %q = %d, output %q; want %d containing %q", tt.args, code, stdout.String()+stderr.String(), tt.wantCode, tt.wantOutput)
		}
	}
}
