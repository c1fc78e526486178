// Package standins holds stand-ins for the external programs the runner
// drives, so the runner can be tested end to end on a machine without GPUs,
// Python or a Buildkite agent. They are real programs speaking the real
// protocols and writing the real file formats, over loopback only:
//
//   - cmd/vllm: "vllm serve" (runs the OpenAI-compatible server of
//     runner/internal/e2e/fakes/openai) and "vllm bench serve" (drives a
//     server and writes vLLM's result JSON and summary).
//   - cmd/lm_eval: lm-evaluation-harness's CLI for gsm8k over an invented
//     arithmetic dataset.
//   - cmd/buildkite-agent: a recording buildkite-agent.
//   - cmd/docker: the docker CLI and daemon for a server container on a
//     machine without containers.
//   - cmd/aiperf: `aiperf profile` against an OpenAI-compatible server.
//   - cmd/hfhub: a command run against the Hub stand-in
//     (runner/internal/e2e/fakes/hfhub), for the GPU self-test.
//   - pyvllm: the Python entry point vllm.benchmarks.serve, which runs
//     the stand-in `vllm bench serve`.
//   - argparse: Python-compatible argument parsing shared by the programs.
//   - procscan: what model code could read of other processes.
//
// They are a module of their own, so that what only they need (docker's
// CLI packages for cmd/docker) stays out of the product's go.mod; the
// tests build them with runner/internal/e2e/fakes/fakebin.
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
// a speculative method without a count drafts one token. With
// --enable-auto-tool-choice and --tool-call-parser (any name) it answers
// chat requests with tools as vLLM does when its parser found calls
// (message.tool_calls, finish_reason "tool_calls"); without them a request
// with tools and tool_choice "auto" gets vLLM's 400.
//
// Like vLLM 0.26.0 (the recordings in the repository's testdata/vllm-0.26.0)
// it is a process tree: the API server starts an engine process
// (EngineCore, the same executable run again) in its process group, which
// loads the model and gets SIGTERM when its parent dies; every line of
// each carries vLLM's prefix, "(APIServer pid=N) " or "(EngineCore pid=M) ",
// and each request an access line. The load (FAKE_VLLM_STARTUP_DELAY) is
// the engine's, logged as vLLM logs it (weights, model loading,
// torch.compile, CUDA graph capture, "init engine ... took"), each with
// the time it took. SIGTERM or SIGINT shut it down with exit status 0
// through vLLM's [shutdown] sequence: the engine's four lines, the API
// server's, which SIGKILLs what is left of the engine ("force killing
// remaining processes count=1"), uvicorn's, and the resource tracker's
// leaked-semaphore warning. Stopped during the load, both end silently,
// as the recordings show nothing then. An API server SIGKILLed leaves an
// engine that logs its shutdown and ends.
//
// Its knobs:
//
//	FAKE_VLLM_STARTUP_DELAY            time to "load the model" before listening; a Go
//	                                   duration ("2s") or seconds ("2"). Default 0.
//	FAKE_VLLM_EXIT_DURING_LOAD         exit with this status after the weights loaded:
//	                                   the engine prints its traceback and ends, the API
//	                                   server raises vLLM's "Engine core initialization
//	                                   failed. See root cause above.".
//	FAKE_VLLM_EXIT_MESSAGE             the root-cause line of that traceback
//	                                   (default: a CUDA out-of-memory error).
//	FAKE_VLLM_DIE_AFTER_REQUESTS       N: when generation request N+1 arrives the
//	                                   engine dies: every connection drops and the
//	                                   process exits with status 1.
//	FAKE_VLLM_UNHEALTHY_AFTER_REQUESTS N: after N generation requests /health answers
//	                                   503 and later generation requests get 500.
//	FAKE_VLLM_NEVER_HEALTHY            true: listen, but /health always answers 503.
//	FAKE_VLLM_ACCURACY                 fraction of arithmetic questions (and of
//	                                   function-calling questions) answered
//	                                   correctly, 0 to 1. Default 1.
//	FAKE_VLLM_BFCL_DATA                a bfcl_eval data directory: its single-turn
//	                                   questions are answered with the calls of
//	                                   BFCL's possible answers (openai.LoadBFCLAnswers);
//	                                   others with words, no call.
//	FAKE_VLLM_TOKEN_DELAY              time spent per generated token. Default 0.
//	FAKE_VLLM_IGNORE_SIGTERM           true: ignore SIGTERM so only SIGKILL (or SIGINT)
//	                                   stops the server.
//	FAKE_VLLM_PID_FILE                 serve writes its pid to this file.
//	FAKE_VLLM_NO_SPECULATION           true: accept --speculative-config but never
//	                                   draft, so no acceptance is reported.
//	FAKE_VLLM_ENGINE_ESCAPE            group or session: the engine leaves the server's
//	                                   process group (or session), is no longer ended by
//	                                   the API server or its death, and waits for a signal.
//	FAKE_VLLM_PLANT_FROM, _INTO        a hostile server: from its first request on, copy every file
//	                                   of the folder _FROM into every folder under _INTO
//	                                   (a planted results_2099-….json, bench JSON).
//	FAKE_VLLM_REWRITE_INTO, _SCORE     a hostile server: rewrite the exact_match scores of
//	                                   every lm_eval results_*.json under _INTO to _SCORE, in
//	                                   place, putting its modification time back.
//	FAKE_PROC_SCAN_DIR                 vllm (serve, bench) and lm_eval, at start, write what
//	                                   model code could read of other processes: every
//	                                   /proc/*/environ they can read, every /proc/*/mem they
//	                                   can open (package procscan).
//	FAKE_VLLM_ARGV_LOG                 file to which each start appends its argv as a
//	                                   JSON array: ["vllm", "serve", MODEL, flags...].
//
// "vllm bench serve" takes the real option set (unknown options exit 2 with
// argparse's "unrecognized arguments"). It supports the random dataset and
// the hf datasets philschmid/mt-bench and likaixin/InstructCoder (real
// prompt lengths, --hf-output-len answers; streamed from the hub each run,
// or with --no-stream read from $HF_HOME/datasets/<org>___<name>, fetched
// there first when missing; HF_HUB_OFFLINE or HF_DATASETS_OFFLINE make any
// fetch fail as datasets does), the openai, vllm and openai-chat
// backends, finite and infinite request rates, warm-ups and goodput; other
// datasets fail. It exits 1 if the server cannot be reached at the start;
// failed requests are reported in the result file, as vLLM does. Knobs:
//
//	FAKE_HF_FETCH_LOG                  file to which every hub fetch of a dataset
//	                                   appends its path, one a line.
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
//	FAKE_LMEVAL_EXIT_DELAY             a duration to wait after writing the results,
//	                                   before printing the table and exiting (real
//	                                   lm_eval writes the samples meanwhile).
//
// The test problems are chosen so that the exact match of any prefix of the
// set tracks the server's FAKE_VLLM_ACCURACY within a few percent.
//
// # buildkite-agent
//
// Supported: what the runner and the generated steps run: annotate,
// artifact upload, artifact download (--step) and secret get (one key,
// default format). Any other command, and forms of these the
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
//	FAKE_AGENT_DOWNLOADS               directory artifact download serves from:
//	                                   <step key>/<path> ("/" and ":" in a key
//	                                   become "_"); files arrive mode 0644.
//	FAKE_AGENT_STEP_STATES             directory of <step key> files holding the
//	                                   step's state, for step get state --step.
//	FAKE_AGENT_UPLOAD_DELAY            Go duration artifact upload takes before it
//	                                   copies (a slow link); it copies once awake.
//
// Unset directories mean the command is only recorded.
//
// # docker
//
// Supported: run -d, exec, logs, stop, rm, ps -q and inspect. Flags are
// parsed by spf13/pflag with docker/cli's own option types (ListOpts with
// its validators, UlimitOpt, GpuOpts, MemBytes, FilterOpt, ...), so every
// real flag of these commands is known, with its shorthand and value
// type, and a malformed value fails with docker's message and status 125
// ("unknown flag: --x" and the usage lines likewise). The client's and
// daemon's checks of the values the runner uses are done as docker does
// them: -p (docker's port parser; also the long published=,target= form),
// -v ([SOURCE:]TARGET[:MODE], TARGET absolute, volume names), --device
// (path and mode; the host device must exist), --ipc (none, private,
// shareable, host, container:NAME), --security-opt, --cap-add (known
// capabilities), --name ([a-zA-Z0-9][a-zA-Z0-9_.-]+, unique), the image
// reference, and a host port already held. A real flag the stand-in does
// not act on (--cpus, --memory, --workdir, ...) parses, then fails
// with "fake docker: ... does not emulate it" (status 125); so do docker
// commands and global options it does not emulate, and run without -d.
// Daemon errors are docker's: "Conflict. The container name "/N" is
// already in use by container "ID". ...", "No such container: N",
// "container ID is not running"; run prefixes them with "docker: " and
// exits 125, the other commands exit 1.
//
// A container is its image's entrypoint, `vllm serve` (the stand-in vllm
// beside the docker stand-in), or the --entrypoint program, with the
// arguments after the image, started
// by a supervisor process in a session of its own, in a process group of
// its own, working in a directory of the container's. Its environment is
// the image's (PATH with FAKE_DOCKER_IMAGE_PATH and then the stand-ins'
// directory first, HOME, HOSTNAME
// and FAKE_DOCKER_IMAGE_ENV's variables) and the -e values: NAME=V as
// given, a bare NAME copied from docker's own environment, or dropped if
// docker has none. Its output goes to a JSON-lines log per stream; logs
// -f prints it from the start on the streams it was written to and exits
// 0 when the container ends. exec runs a command with the container's
// environment plus its -e values, reading docker's stdin under -i and
// nothing without; a signal ends docker exec with 128+n
// but not the command, which docker does not forward signals to. stop -t S
// sends SIGTERM (or -s) to the entrypoint only, waits S seconds, then
// kills every process of the container; when the entrypoint ends, by
// itself or so, its group and every exec's are killed, as at the end of
// a PID namespace. --rm removes the container once it has ended. rm -f
// kills and removes; a missing container is no error. ps -q [-a]
// [--no-trunc] [--filter label=K[=V]|name=RE|id=PREFIX|status=S] lists IDs,
// newest first. inspect [-f TEMPLATE] renders Go templates over the
// fields Id, Name, Created, Path, Args, State (Status, Running, Pid,
// ExitCode, StartedAt, FinishedAt, ...), Config (Image, Env, Labels, Cmd,
// Entrypoint, Hostname) and HostConfig.AutoRemove, or prints them as JSON.
//
// Simplifications: containers share the host's filesystem, network and
// PID space. The server listens on the host's loopback at its --port, so
// run refuses a server whose --port is not published on the same host
// port to an address loopback reaches (127.0.0.1, 0.0.0.0, ::, none) or
// that binds a specific address (--host other than 0.0.0.0 or ::), which
// docker would start but nothing could reach; a bind mount must mount a
// path onto itself, and a missing source is not created. Images are never
// pulled; --gpus is accepted as on a GPU host. Knobs:
//
//	FAKE_DOCKER_STATE                  directory of the daemon's state. Default
//	                                   $HOME/.fake-docker.
//	FAKE_DOCKER_IMAGE_ENV              comma-separated names of docker's own
//	                                   variables every container starts with, as
//	                                   if the image's ENV set them: how a test
//	                                   hands the vllm inside its FAKE_VLLM_* knobs.
//	FAKE_DOCKER_IMAGE_PATH             directories the image has first on its PATH
//	                                   (its Python, as /opt/venv/bin is in vLLM's).
package standins
