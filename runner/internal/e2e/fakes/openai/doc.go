// Package openai is an in-process stand-in for a vLLM OpenAI-compatible
// server. It speaks the same HTTP API (health, models, completions, chat
// completions with and without SSE streaming, Prometheus metrics) over
// loopback so that the runner can be exercised end to end without a GPU.
//
// Generation is deterministic: a token is a whitespace-separated word, prompt
// tokens are counted as words, and arithmetic questions of the form
// "What is A + B?" are answered correctly for a configurable, hash-chosen
// fraction of questions (see [IsAnsweredCorrectly]). Everything else gets
// filler words. With speculative tokens configured, the vllm:spec_decode_*
// counters advance as tokens are generated, following a fixed acceptance
// pattern.
package openai
