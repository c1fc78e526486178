package proc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		n      int
		writes []string
		want   []string
	}{
		{name: "empty", n: 3, want: []string{}},
		{name: "fewer than n", n: 3, writes: []string{"a\nb\n"}, want: []string{"a", "b"}},
		{name: "wraps", n: 3, writes: []string{"1\n2\n3\n", "4\n5\n"}, want: []string{"3", "4", "5"}},
		{name: "line split across writes", n: 2, writes: []string{"al", "pha\nbe", "ta\n"}, want: []string{"alpha", "beta"}},
		{name: "partial last line counts", n: 2, writes: []string{"1\n2\n3"}, want: []string{"2", "3"}},
		{name: "n below one keeps one", n: 0, writes: []string{"a\nb\n"}, want: []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tail := NewTail(tt.n)
			for _, w := range tt.writes {
				fmt.Fprint(tail, w)
			}
			if diff := cmp.Diff(tail.Lines(), tt.want); diff != "" {
				t.Errorf("Lines() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestTailString(t *testing.T) {
	t.Parallel()
	tail := NewTail(80)
	for i := range 100 {
		fmt.Fprintf(tail, "line %d\n", i)
	}
	got := tail.String()
	if !strings.HasPrefix(got, "line 20\n") || !strings.HasSuffix(got, "line 99\n") || strings.Count(got, "\n") != 80 {
		t.Errorf("String() = %q, want lines 20..99", got)
	}
	if got := NewTail(5).String(); got != "" {
		t.Errorf("empty String() = %q, want empty", got)
	}
}

func TestCauseOf(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 600)
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"python traceback", []string{
			"INFO 12-01 engine starting",
			"Traceback (most recent call last):",
			`  File "/usr/lib/python3/site-packages/vllm/worker.py", line 88, in load`,
			"    raise torch.OutOfMemoryError(msg)",
			"torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB",
			"INFO 12-01 shutting down",
		}, "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB"},
		{"chained errors", []string{
			"step 3",
			"ERROR 12-01 [core.py:512] EngineCore failed to start.",
			"RuntimeError: Engine core initialization failed. See root cause above.",
		}, "ERROR 12-01 [core.py:512] EngineCore failed to start.\nRuntimeError: Engine core initialization failed. See root cause above."},
		{"no error line", []string{"loading", "done 12/40", ""}, "done 12/40"},
		{"access log is never the cause", []string{"loading", `INFO:     127.0.0.1:43218 - "GET /health HTTP/1.1" 503 Service Unavailable`}, "loading"},
		{"nothing", nil, ""},
		// vLLM 0.26.0's own lines: torch's C++ warnings and vLLM's logger.
		{"warnings are never the cause", []string{
			"RuntimeError: the real one",
			"[W1202 07:58:12.964034529 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved. err=-3",
			"[rank0]:[W1202 07:49:19.795354059 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources.",
			"(EngineCore pid=4618) WARNING 12-02 07:58:17 [kernel_warmup.py:258] No FlashInfer autotune cache entries found.Falling back to default tactics.",
			"/venv/lib/python3.12/site-packages/vllm/benchmarks/serve.py:1123: UserWarning: All requests failed. This is likely due to a misconfiguration on the benchmark arguments.",
			"2026-12-02:07:53:27 WARNING  [evaluator:333] Overwriting default num_fewshot of gsm8k from 5 to 5",
		}, "RuntimeError: the real one"},
		{"only warnings and information", []string{
			"[W1202 07:58:12.964034529 socket.cpp:207] [c10d] The hostname of the client socket cannot be retrieved. err=-3",
			"(EngineCore pid=4618) INFO 12-02 07:58:17 [ll_bf16.py:30] cuteDSL (CUTLASS Python) not available, ll_bf16_gemm disabled",
			"(EngineCore pid=4618) INFO 12-02 07:58:26 [core.py:1326] [shutdown] EngineCore: exiting busy loop",
		}, ""},
		{"capped", []string{"ValueError: " + long}, "…" + ("ValueError: " + long)[len("ValueError: "+long)-400:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := CauseOf(tt.lines); got != tt.want {
				t.Errorf("CauseOf() = %q, want %q", got, tt.want)
			}
			// Without the fall-back only an error line is a cause.
			tail := NewTail(40)
			for _, l := range tt.lines {
				fmt.Fprintln(tail, l)
			}
			want := tt.want
			if tt.name == "no error line" || tt.name == "access log is never the cause" {
				want = ""
			}
			if got := tail.ErrorCause(); got != want {
				t.Errorf("ErrorCause() = %q, want %q", got, want)
			}
		})
	}
}
