// Package summary defines results/<name>/summary.json, the one file per
// recipe run that reports, dashboards and regression baselines read. Its
// layout is a contract: fields are only ever added within a schema version;
// removing, renaming or changing the meaning of one bumps SchemaVersion, and
// Read refuses versions newer than it knows.
//
// The file is JSON, indented by two spaces, with keys in the order below and
// map keys sorted. Times are RFC 3339 in UTC. Fields marked "optional" are
// left out when empty; lists are always present, possibly empty.
//
// A value that was not measured is never written as 0: a bench run whose
// status is not "ok" has no throughput, latency, spec_decode or metrics
// keys, and a gate that had no value has "value": null. Summaries written
// before this rule held zeros there; readers must look at the status (as
// they always had to) and may meet either form within schema version 1.
//
// # Top level
//
//   - schema_version: layout version, currently 1.
//   - recipe: recipe name, e.g. "gpt_oss_120b-mi355x".
//   - gpu: GPU profile, e.g. "MI355X", "H200".
//   - device: optional; GPU product name as reported by the machine.
//   - num_gpus: GPUs given to the server; per-GPU throughputs divide by it.
//   - tp, dp: optional; tensor- and data-parallel sizes of the server.
//   - precision: optional; weight or KV-cache precision label, e.g. "fp8".
//   - model: served model id, e.g. "openai/gpt-oss-120b".
//   - image: optional; container image the run used (repo:tag@digest
//     when the generator pinned it).
//   - image_tag, image_digest: optional; the tag the recipe asked for and
//     the digest it was pinned to (absent when not pinned).
//   - vllm_commit: optional; vLLM commit of that image.
//   - fingerprint: optional; {sha256, parts}: a sha256 over what makes two
//     nights' numbers comparable (model, serve argv and env, bench runs
//     and sampling, tasks, BFCL settings, GPU kind and count, image
//     repository, tool versions), with those parts readable. A change
//     of it is a known change point: tonight is still judged against
//     the nights before, but for a bench run whose own shape changed.
//   - series: optional; where the recipe last changed within the nights
//     a trend shows: at which build and what changed.
//   - buildkite: optional; the job that ran: build_id, build_number,
//     build_url, job_id, step_key, branch, commit, source (all strings,
//     each optional), as Buildkite names them; baseline_branch, the
//     branch the past nights come from.
//   - tools: optional; how lm-eval and bfcl-eval were found: mode
//     ("venv", "user" or "path"), versions by package, reused (the venv
//     already held the pins), duration_s of the install or check.
//   - model_cache: optional (absent for an attached run); dir (HF_HOME),
//     backing (what holds it), persistent (whether the next job on the
//     node finds it), downloaded_bytes (what it gained from the server's
//     start to ready; -1 when not measurable), ready_seconds.
//   - startup: optional (absent for an attached server and one that never
//     became ready); the server's start-up in seconds: ready_s (its
//     process start to ready, the runner's clock) and, each as vLLM's log
//     says it and absent when it does not, weights_load_s ("Loading
//     weights took"), model_load_s ("Model loading took"), torch_compile_s
//     ("torch.compile took … in total"), cuda_graphs_s ("Graph capturing
//     finished in") and engine_init_s ("init engine (profile, create kv
//     cache, warmup model) took"; compile and graphs included).
//   - started, finished: optional; wall-clock start and end of the run.
//   - verdict: "pass" (every planned phase ran, every gate had a value and
//     passed), "fail" (a gate failed), "error" (something planned is
//     missing: a phase failed, was not run or was canceled, or a gate had
//     no value) or "unverified" (all that was measured passed, but a check
//     could not be made: a gate had no baseline, or speculative decoding
//     was configured and the bench reported no acceptance). The runner
//     exits 0, 1, 1 and contract.ExitUnverified (75) for them; a "fail"
//     on regression gates alone exits contract.ExitRegressed (79). Before
//     "unverified" existed, such runs were "pass".
//   - canceled: optional; why the run was stopped before its end (the
//     signal: "received terminated"); its verdict is then "error".
//   - problems: optional; one line per reason the verdict is not "pass",
//     besides failed gates (a failed, not-run or canceled phase, a gate
//     without a value or a baseline), each naming the phase, metric, file
//     or key.
//   - phases, bench, accuracy, gates: the lists below.
//
// # phases
//
// One entry per runner phase that was reached, in order:
//
//   - name: "serve", "ready", "bench", "lm_eval", "gate" or "publish".
//   - status: "ok", "failed", "skipped" (not planned for this run: bench
//     only, or an attached server with nothing to serve; not an error),
//     "not-run" (planned, but an earlier failure kept it from running: the
//     server exited or was never ready; an error) or "canceled". Before
//     "not-run" existed, such phases were "skipped".
//   - started, finished: optional; when the phase ran.
//   - error: optional; why it failed or was canceled.
//
// # bench
//
// One entry per benchmark configuration and concurrency. The numbers are the
// median over repetitions, taken per metric (see results.MedianOf):
//
//   - name: run name, unique within the summary, e.g. "8k-in-1k-out-c128".
//   - config: recipe benchmark configuration the run belongs to.
//   - concurrency: --max-concurrency; 0 when unlimited.
//   - num_prompts: prompts per repetition.
//   - input_len, output_len: optional; configured prompt and output length
//     in tokens.
//   - repetitions: number of repetitions the median was taken over.
//   - backend: optional; vllm bench --backend, e.g. "openai".
//   - temperature: optional; the bench's --temperature, 0 (greedy) unless
//     the recipe set one.
//   - status: "ok", "failed", "not-run" or "canceled"; a run in which any
//     prompt failed or did not complete is "failed".
//   - error: optional; why the run failed.
//   - file: optional; path of the merged bench-<name>.json (vLLM layout),
//     relative to the summary's directory.
//   - request_throughput: requests/s. This and every key down to metrics
//     are present only when status is "ok".
//   - output_throughput, total_token_throughput: tokens/s over all GPUs,
//     output tokens only and input plus output.
//   - output_throughput_per_gpu, total_throughput_per_gpu: the same divided
//     by num_gpus.
//   - ttft_ms, tpot_ms, itl_ms: time to first token, time per output token
//     after the first, inter-token latency; each {mean, median, p99} in ms.
//   - e2el_ms: optional; end-to-end request latency, same shape.
//   - cost_per_mtok: optional, present when the profile has a
//     gpu_hour_price: {input, output, total}, the cost of a million tokens
//     of each kind (gpu_hour_price × num_gpus over the tokens an hour at
//     the run's throughput; input throughput is total less output), null
//     for a kind with no throughput.
//   - spec_decode: optional, present when the server speculated:
//     acceptance_rate in percent (0-100), acceptance_length in tokens per
//     draft including the bonus token, per_position acceptance as fractions
//     (0-1), position 0 first.
//   - metrics: optional; every numeric top-level value of the vLLM result,
//     under vLLM's key names, e.g. "p99_ttft_ms", "duration".
//   - repetition_values: optional; with several repetitions, each
//     regression-gated metric's value of every repetition, in order, e.g.
//     "output_throughput": [2901.5, 2908.8, 2915.0].
//
// # accuracy
//
// One entry per lm_eval task:
//
//   - task: lm_eval task name, e.g. "gsm8k".
//   - num_fewshot: few-shot examples used.
//   - status, error: as for bench; a task whose results file holds a score
//     that is not a finite number (NaN, Infinity, a string) or lacks a
//     gated metric is "failed", and error names the file and key.
//   - metrics: optional; "<metric>,<filter>" → value, e.g.
//     "exact_match,strict-match": 0.93. Values are fractions where lm_eval
//     reports fractions.
//   - stderr: optional; standard error under the same keys as metrics; a
//     metric without a computed stderr has no entry.
//   - samples: optional; documents evaluated.
//   - file: optional; path of the lm_eval results file, relative to the
//     summary's directory.
//
// # gates
//
// One entry per check of a metric against a bound:
//
//   - kind: "accuracy" (task metric vs fixed bound or expected value),
//     "bench" (run metric vs fixed bound), "regression" (run metric vs
//     earlier nights) or "spec_decode" (a speculating recipe's run
//     reported acceptance).
//   - subject: task or bench run name the metric belongs to.
//   - metric: metric key, as in the entry's metrics map.
//   - value: the measured value, or null when there was none.
//   - bound: the rule, for people, e.g. ">= 0.93", "baseline 0.930 ± 0.020",
//     "≥ -5% vs median of 5 nights (1234.5)".
//   - baseline: optional; the reference value the rule used.
//   - delta_pct: optional; 100 × (value − baseline) / baseline.
//   - verdict: "pass", "fail", "error" (no value: the run or task failed
//     or did not run, or the results lack the key), "no-baseline" (too
//     little history to judge; the run is unverified), "unverified"
//     (spec_decode: no acceptance reported) or "skipped" (its phase was
//     not planned, e.g. bench only). An accuracy score at or below 0, with
//     no min, also gets a failing gate with bound "> 0", whatever the
//     baseline says.
//   - message: optional; explanation for people.
//   - baseline_from, tolerance: optional; an accuracy gate that compares
//     with another recipe, and the drop it allows.
//   - detector: optional, regression gates the detector judged: nights
//     (comparable past nights with the metric), used, outliers,
//     repetitions, repetition_min, repetition_max, tonight (geometric mean
//     of the repetitions), noise_cv_pct, floor_pct (max_drop_pct),
//     noise_threshold_pct, threshold_pct (the larger), worse_pct (worse is
//     positive), rule ("single-night" or "two-night" when flagged),
//     reduced_power (judged on fewer nights than calibrated), why.
//   - change_point: optional, a flagged regression: last_good and
//     first_bad nights ({build, tonight, value, image_digest,
//     vllm_commit}), p and found (false: no significant split, the last
//     night and tonight are named), before and after (the means), bisect
//     (command lines; only when both vLLM commits are known).
package summary
