package childenv

import "fmt"

// Role is the kind of child process; it decides which variables of the
// job's environment the child gets.
type Role int

const (
	// Install is pip and `python3 -m venv`: the basics, the network
	// settings and pip's index settings.
	Install Role = iota + 1
	// Server is a native `vllm serve`: the basics, GPU and library
	// settings, and the Hugging Face token (the model download).
	Server
	// Bench is a native `vllm bench serve`: like Server, since it loads
	// the model's tokenizer from the Hub.
	Bench
	// LMEval is lm_eval. Its local-completions model loads the model's
	// tokenizer from the Hub unless the server offers a remote tokenizer
	// (lm_eval/models/openai_completions.py, tokenizer_backend "auto"), so
	// it gets the Hugging Face settings and token, but no GPU settings.
	LMEval
	// BFCL is the python driver of bfcl-eval: Hugging Face settings
	// without the token (its data ships in the package) and BFCL_*.
	BFCL
	// Agent is buildkite-agent: the Buildkite job variables with the
	// agent's access token, and AWS_* for artifact uploads to S3. Never
	// the API token.
	Agent
	// Docker is a docker CLI call that starts nothing which downloads:
	// logs, stop, rm, ps.
	Docker
	// DockerServer is `docker run` of the server. The Hugging Face token
	// is passed to the container by name (-e HF_TOKEN), so docker reads it
	// from its own environment and it never shows on a command line.
	DockerServer
	// DockerBench is `docker exec CONTAINER vllm bench serve`, which
	// passes the token by name for the tokenizer download.
	DockerBench
)

func (r Role) String() string {
	switch r {
	case Install:
		return "install"
	case Server:
		return "server"
	case Bench:
		return "bench"
	case LMEval:
		return "lmeval"
	case BFCL:
		return "bfcl"
	case Agent:
		return "agent"
	case Docker:
		return "docker"
	case DockerServer:
		return "docker-server"
	case DockerBench:
		return "docker-bench"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}
