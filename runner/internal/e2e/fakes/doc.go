// Package fakes holds stand-ins for the external programs the runner
// drives, so the runner can be tested end to end on a machine without GPUs,
// Python or a Buildkite agent. They are real programs speaking the real
// protocols and writing the real file formats, over loopback only:
//
//   - openai: an in-process fake of vLLM's OpenAI-compatible HTTP server.
//   - cmd/vllm: "vllm serve" (runs that server) and "vllm bench serve"
//     (drives a server and writes vLLM's result JSON and summary).
//   - cmd/lm_eval: lm-evaluation-harness's CLI for gsm8k over an invented
//     arithmetic dataset.
//   - cmd/buildkite-agent: a recording buildkite-agent.
//   - fakebin: builds the three executables for tests.
//   - argparse, pyjson: Python-compatible argument parsing and JSON output
//     shared by the stand-ins.
//
// # vllm
//
// "vllm serve MODEL [flags]" accepts any vLLM engine flag and records it. It
// uses --port (default 8000), --host (wildcards become 127.0.0.1),
// --served-model-name, --max-model-len (a number, "auto", or 32k/32K
// style), and the speculative config in any of its spellings
// (--speculative-config '{"num_speculative_tokens": 3}',
// --speculative-config.num_speculative_tokens 3,
// --speculative_config.num_speculative_tokens=3, --num-speculative-tokens);
// a speculative method without a count drafts one token. SIGTERM or SIGINT
// shut it down with exit status 0.
//
// Its knobs:
//
//	FAKE_VLLM_STARTUP_DELAY            time to "load the model" before listening; a Go
//	                                   duration ("2s") or seconds ("2"). Default 0.
//	FAKE_VLLM_EXIT_DURING_LOAD         exit with this status after the startup delay,
//	                                   printing an engine start-up traceback.
//	FAKE_VLLM_EXIT_MESSAGE             the root-cause line of that traceback
//	                                   (default: a CUDA out-of-memory error).
//	FAKE_VLLM_DIE_AFTER_REQUESTS       N: when generation request N+1 arrives the
//	                                   engine dies: every connection drops and the
//	                                   process exits with status 1.
//	FAKE_VLLM_UNHEALTHY_AFTER_REQUESTS N: after N generation requests /health answers
//	                                   503 and later generation requests get 500.
//	FAKE_VLLM_NEVER_HEALTHY            true: listen, but /health always answers 503.
//	FAKE_VLLM_ACCURACY                 fraction of arithmetic questions answered
//	                                   correctly, 0 to 1. Default 1.
//	FAKE_VLLM_TOKEN_DELAY              time spent per generated token. Default 0.
//	FAKE_VLLM_IGNORE_SIGTERM           true: ignore SIGTERM so only SIGKILL (or SIGINT)
//	                                   stops the server.
//	FAKE_VLLM_PID_FILE                 serve writes its pid to this file.
//	FAKE_VLLM_NO_SPECULATION           true: accept --speculative-config but never
//	                                   draft, so no acceptance is reported.
//	FAKE_VLLM_ENGINE_ESCAPE            group or session: serve starts an engine-core
//	                                   child that leaves the server's process group
//	                                   (or session) and waits for a signal.
//	FAKE_VLLM_ARGV_LOG                 file to which each start appends its argv as a
//	                                   JSON array: ["vllm", "serve", MODEL, flags...].
//
// "vllm bench serve" takes the real option set (unknown options exit 2 with
// argparse's "unrecognized arguments"). It supports the random dataset
// (the only one recipes may use), the openai, vllm and openai-chat
// backends, finite and infinite request rates, warm-ups and goodput; other
// datasets fail. It exits 1 if the server cannot be reached at the start;
// failed requests are reported in the result file, as vLLM does. Knobs:
//
//	FAKE_VLLM_BENCH_NO_OUTPUT          true: exit 0 without writing the result file.
//	FAKE_VLLM_BENCH_KILL_PIDFILE       after the run, SIGKILL the pid in this file
//	                                   (a server's FAKE_VLLM_PID_FILE) and wait for it
//	                                   to die: a server lost between two phases.
//
// # lm_eval
//
// "lm_eval [run] --model local-completions --model_args k=v,... --tasks gsm8k
// ..." sends real requests to base_url (num_concurrent workers, max_retries
// attempts, timeout seconds, max_gen_toks) and scores them with gsm8k's
// strict-match and flexible-extract filters. Real options the runner never
// passes (local-chat-completions, --limit, --gen_kwargs, --batch_size,
// --apply_chat_template, JSON model_args) fail. Knobs:
//
//	FAKE_LMEVAL_DOCS                   size of the invented test set. Default 50.
//	FAKE_LMEVAL_SCORE                  replace gsm8k exact_match,flexible-extract in
//	                                   the results file: nan, inf (bare tokens, as
//	                                   Python writes them), string:TEXT, or missing.
//	FAKE_LMEVAL_NO_OUTPUT              true: exit 0 without writing --output_path.
//	FAKE_LMEVAL_EXIT                   after the requests, exit with this status
//	                                   (after a traceback) instead of writing results.
//
// The test problems are chosen so that the exact match of any prefix of the
// set tracks the server's FAKE_VLLM_ACCURACY within a few percent.
//
// # buildkite-agent
//
// Supported: what the runner runs, annotate, artifact upload and secret get
// (one key, default format). Any other command, and forms of these the
// runner never uses (annotate --append, artifact upload --literal), exit 1.
// Knobs:
//
//	FAKE_AGENT_LOG                     JSON-lines file; each invocation appends
//	                                   {"argv": [...], "stdin": "...", "env": {...}}
//	                                   with every BUILDKITE_* variable but tokens.
//	FAKE_AGENT_ARTIFACTS               directory artifact upload copies matches into,
//	                                   keeping their paths.
//	FAKE_AGENT_ANNOTATIONS             directory of <context>.md bodies and
//	                                   <context>.style styles ("/" in a context
//	                                   becomes "_"; no context means "default").
//	FAKE_AGENT_SECRETS                 JSON file of secret key to value.
//
// Unset directories mean the command is only recorded.
package fakes
