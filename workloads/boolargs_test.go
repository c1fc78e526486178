package workloads

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// YAML 1.2 booleans in bench args pass (true, True, TRUE) or leave out
// (false, False, FALSE) a bare flag, as the recipe's own boolean fields
// read them; a quoted "yes" is text. Before, True and TRUE dropped the flag.
func TestBenchArgBooleans(t *testing.T) {
	t.Parallel()
	src := `name: ok
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
        flag-a: true
        flag-b: True
        flag-c: TRUE
        flag-d: false
        flag-e: False
        flag-f: FALSE
        flag-g: "yes"
        flag-h: 'off'
`
	r, ps := Parse("r.yaml", []byte(src), defaultProfiles(t))
	if r == nil {
		t.Fatalf("Parse() problems: %v", ps)
	}
	want := []BenchArg{{Flag: "--flag-a"}, {Flag: "--flag-b"}, {Flag: "--flag-c"}, {Flag: "--flag-g", Values: []string{"yes"}}, {Flag: "--flag-h", Values: []string{"off"}}}
	if diff := cmp.Diff(r.Bench.Configs[0].Args, want); diff != "" {
		t.Errorf("Parse() bench args diff (-got +want):\n%s", diff)
	}
}
