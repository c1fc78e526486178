package rootcause

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readLines(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "vllm-0.26.0", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// The excerpts in the repository's testdata/vllm-0.26.0 are vLLM 0.26.0's own output on an H200.
func TestOfRecordedLogs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, want string
	}{
		// The EngineCore dies first; the API server's RuntimeError only
		// says so, and the NCCL warning between them is no cause.
		{"engine-start-fails.server.log", "(EngineCore pid=1150) ModuleNotFoundError: No module named 'flashinfer'"},
		// Killed by SIGKILL: the server printed no exception at all.
		{"server-killed-mid-bench.server.log", ""},
		// The bench's failed requests: the innermost of each chain.
		{"server-killed-mid-bench.bench.log", "ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 37873)"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			lines := readLines(t, tt.file)
			if got := Of(lines); got != tt.want {
				t.Errorf("Of() = %q, want %q", got, tt.want)
			}
			// Streamed in pieces, as a pipe delivers it.
			var tr Tracker
			text := strings.Join(lines, "\n") + "\n"
			for len(text) > 0 {
				n := min(len(text), 37)
				tr.Write([]byte(text[:n]))
				text = text[n:]
			}
			got := ""
			if e, ok := tr.Root(); ok {
				got = e.String()
			}
			if got != tt.want {
				t.Errorf("Tracker.Root() = %q, want %q", got, tt.want)
			}
			if tt.file != "server-killed-mid-bench.bench.log" {
				if p := tr.Prefix("APIServer"); !strings.HasPrefix(p, "(APIServer pid=") {
					t.Errorf("Prefix(APIServer) = %q", p)
				}
			}
		})
	}
}

func TestOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lines []string
		want  string
	}{
		{"plain traceback", []string{
			"Traceback (most recent call last):",
			`  File "/venv/lib/python3.12/site-packages/lm_eval/api/model.py", line 412, in generate_until`,
			"    raise RuntimeError(msg)",
			"RuntimeError: Request failed: 500 Internal Server Error",
		}, "RuntimeError: Request failed: 500 Internal Server Error"},
		{"chained: the innermost", []string{
			"Traceback (most recent call last):",
			`  File "a.py", line 1, in f`,
			"ValueError: bad shape",
			"",
			"During handling of the above exception, another exception occurred:",
			"",
			"Traceback (most recent call last):",
			`  File "a.py", line 3, in g`,
			"RuntimeError: wrapper",
		}, "ValueError: bad shape"},
		{"two unrelated tracebacks: the last one ended the process", []string{
			"Traceback (most recent call last):",
			`  File "a.py", line 1, in f`,
			"KeyError: 'x'",
			"INFO retrying",
			"Traceback (most recent call last):",
			`  File "a.py", line 3, in g`,
			"OSError: [Errno 28] No space left on device",
		}, "OSError: [Errno 28] No space left on device"},
		{"an engine worker before the API server, though later", []string{
			"(APIServer pid=10) Traceback (most recent call last):",
			`(APIServer pid=10)   File "x.py", line 1, in f`,
			"(EngineCore_DP0 pid=11) ERROR 12-02 07:49:19 [core.py:1330] Traceback (most recent call last):",
			`(EngineCore_DP0 pid=11) ERROR 12-02 07:49:19 [core.py:1330]   File "y.py", line 2, in g`,
			"(APIServer pid=10) vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
			"(EngineCore_DP0 pid=11) ERROR 12-02 07:49:19 [core.py:1330] torch.OutOfMemoryError: CUDA out of memory.",
		}, "(EngineCore_DP0 pid=11) torch.OutOfMemoryError: CUDA out of memory."},
		{"no traceback", []string{"ERROR 12-01 [core.py:512] EngineCore failed to start.", "RuntimeError: boom"}, ""},
		{"a traceback cut short", []string{"Traceback (most recent call last):", `  File "a.py", line 1, in f`}, ""},
		{"not an exception line", []string{"Traceback (most recent call last):", `  File "a.py", line 1, in f`, "Segmentation fault (core dumped)"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Of(tt.lines); got != tt.want {
				t.Errorf("Of() = %q, want %q", got, tt.want)
			}
		})
	}
}
