package childenv_test

import (
	"fmt"

	"github.com/benchkite/benchkite/runner/internal/childenv"
)

// The server gets the GPU settings, the recipe's env and the Hugging Face
// token, masked when printed; the agent's token stays behind.
func Example() {
	environ := []string{
		"PATH=/usr/bin", "HOME=/root", "HF_TOKEN=hf_abc",
		"CUDA_VISIBLE_DEVICES=0", "BUILDKITE_AGENT_ACCESS_TOKEN=bk",
	}
	env, err := childenv.Build(childenv.Server, childenv.Options{
		Environ: environ,
		Recipe:  []childenv.Var{{Name: "VLLM_ATTENTION_BACKEND", Value: "FLASHINFER"}},
		Runner:  []childenv.Var{{Name: "VLLM_ENGINE_READY_TIMEOUT_S", Value: "3600"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, kv := range childenv.Render(env) {
		fmt.Println(kv)
	}
	// Output:
	// CUDA_VISIBLE_DEVICES=0
	// HF_TOKEN=***
	// HOME=/root
	// PATH=/usr/bin
	// VLLM_ATTENTION_BACKEND=FLASHINFER
	// VLLM_ENGINE_READY_TIMEOUT_S=3600
}
