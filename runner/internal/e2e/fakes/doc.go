// Package fakes holds the stand-ins the end-to-end tests run in-process,
// and what the stand-in programs share with them, so the runner can be
// tested end to end on a machine without GPUs, Python or a Buildkite
// agent. They speak the real protocols and write the real file formats,
// over loopback only:
//
//   - openai: an in-process fake of vLLM's OpenAI-compatible HTTP server.
//   - agentapi: Buildkite's agent API and artifact storage, for the real
//     buildkite-agent's artifact upload, annotate, pipeline upload and
//     secret get.
//   - hfhub: the Hugging Face Hub's dataset endpoints.
//   - fakebin: builds the stand-in programs for tests.
//   - execlog: how every stand-in program records its argv and
//     environment, and how the tests read it.
//   - pyjson: JSON output as Python writes it, shared by openai and the
//     programs.
//
// The stand-in programs themselves (vllm, lm_eval, buildkite-agent,
// docker, aiperf, hfhub) are the module under runner/standins, whose
// package documentation describes each one and its knobs.
package fakes
