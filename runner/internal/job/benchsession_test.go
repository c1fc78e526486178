package job

import (
	"bytes"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/job/benchdriver"
	"github.com/google/go-cmp/cmp"
)

// TestBenchRouter: protocol lines become events, wherever a pipe splits
// them; the bench's own output goes to the run's writer, the rest to the
// log; a mark after a progress bar that did not end its line still counts.
func TestBenchRouter(t *testing.T) {
	t.Parallel()
	var log, run bytes.Buffer
	r := newBenchRouter(&log)
	write := func(s string) {
		for i := 0; i < len(s); i += 7 { // in pieces, as a pipe delivers it
			_, _ = r.Write([]byte(s[i:min(i+7, len(s))]))
		}
	}
	write("import warning\nbenchkite-bench: ready\n")
	r.route(&run)
	write("benchkite-bench: start\nSuccessful requests: 8\n 100%|##| 8/8\rbenchkite-bench: end rc=0\n")
	r.route(nil)
	write("benchkite-bench: end rc=x\n")
	var got []benchdriver.Event
	for len(r.events) > 0 {
		got = append(got, <-r.events)
	}
	want := []benchdriver.Event{{Kind: "ready"}, {Kind: "start"}, {Kind: "end", RC: 0}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("events (-got +want):\n%s", diff)
	}
	if got, want := run.String(), "Successful requests: 8\n 100%|##| 8/8\r\n"; got != want {
		t.Errorf("run output %q, want %q", got, want)
	}
	if got, want := log.String(), "import warning\nbenchkite-bench: end rc=x\n"; got != want {
		t.Errorf("log %q, want %q", got, want)
	}
}

func TestVLLMArgv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv, want []string
	}{
		{[]string{"vllm", "bench", "serve", "--x"}, []string{"vllm", "bench", "serve", "--x"}},
		{[]string{"docker", "exec", "-e", "HF_TOKEN", "vllm", "vllm", "bench", "serve"}, []string{"vllm", "bench", "serve"}},
		{[]string{"vllm", "serve"}, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(vllmArgv(tt.argv), tt.want); diff != "" {
			t.Errorf("vllmArgv(%q) (-got +want):\n%s", tt.argv, diff)
		}
	}
}
