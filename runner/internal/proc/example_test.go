package proc_test

import (
	"fmt"
	"io"
	"os"

	"github.com/benchkite/benchkite/runner/internal/proc"
)

// The server's output goes to the job log with a prefix and into a tail
// kept for the error message should it fail.
func ExamplePrefixWriter() {
	tail := proc.NewTail(80)
	log := proc.NewPrefixWriter(os.Stdout, "[vllm] ")
	out := io.MultiWriter(log, tail)

	fmt.Fprint(out, "INFO Starting vLLM API server\nINFO Loading weights")
	log.Close()
	fmt.Printf("tail: %q\n", tail.Lines())
	// Output:
	// [vllm] INFO Starting vLLM API server
	// [vllm] INFO Loading weights
	// tail: ["INFO Starting vLLM API server" "INFO Loading weights"]
}

func ExampleMaskEnv() {
	env := []string{"HF_TOKEN=hf_secret", "VLLM_USE_V1=1"}
	fmt.Println(proc.MaskEnv(env))
	// Output: [HF_TOKEN=*** VLLM_USE_V1=1]
}
