// Package childenv builds the environment of each process the runner
// starts, from an allow-list, instead of handing every child the job's
// whole environment.
//
// The job's environment holds tokens that can act on the build
// (BUILDKITE_AGENT_ACCESS_TOKEN uploads pipeline steps, BUILDKITE_API_TOKEN
// reads the organisation, BENCHKITE_INGEST_TOKEN writes results). A recipe
// with --trust-remote-code runs code from a model repository inside
// `vllm serve` and inside the bench's tokenizer loader, so those processes
// must not see them. Each child therefore gets what its Role needs: the
// basics (PATH, HOME, locale), the GPU and library settings for vLLM, the
// Hugging Face token only where a download from the Hub happens, the
// Buildkite job variables only for buildkite-agent.
//
// A recipe's env is applied on top, but a recipe may not choose which
// programs or libraries run (PATH, LD_*, PYTHONPATH, ...) nor where the Hub
// token goes: see CheckRecipe.
package childenv
