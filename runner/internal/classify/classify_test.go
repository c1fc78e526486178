package classify

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// The excerpts are shaped as the tools write them: the exception lines of
// Python tracebacks, kubelet reasons, docker's pull errors.
func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		f     Failure
		class Class
		sig   string
		line  string
	}{
		{"HIP OOM at load", Failure{Phase: "ready", Lines: []string{
			"(EngineCore_DP0 pid=412) ERROR 12-01 03:12:44 [core.py:866] EngineCore failed to start.",
			"(EngineCore_DP0 pid=412) ERROR 12-01 03:12:44 [core.py:866] torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of 287.98 GiB of which 1.20 GiB is free.",
			"RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}",
		}}, ClassVLLM, "gpu-oom", "(EngineCore_DP0 pid=412) ERROR 12-01 03:12:44 [core.py:866] torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of 287.98 GiB of which 1.20 GiB is free."},
		{"CUDA OOM", Failure{Phase: "bench", Lines: []string{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."}}, ClassVLLM, "gpu-oom", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."},
		{"no KV cache memory", Failure{Phase: "ready", Lines: []string{"ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine"}}, ClassVLLM, "gpu-oom", "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine"},
		{"NCCL", Failure{Phase: "ready", Lines: []string{"(Worker_TP3 pid=99) RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"}}, ClassVLLM, "nccl", "(Worker_TP3 pid=99) RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"},
		{"engine died, no root cause kept", Failure{Phase: "ready", Lines: []string{"RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}"}}, ClassVLLM, "engine-core-died", "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}"},
		{"engine died mid-run", Failure{Phase: "lm_eval", Lines: []string{"vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause."}}, ClassVLLM, "engine-core-died", "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause."},
		{"vLLM start-up timeout", Failure{Phase: "ready", Lines: []string{"TimeoutError: Timed out waiting for engine core processes to start. This is often caused by slow weight loading for large models. Waited 600s (configured by VLLM_ENGINE_READY_TIMEOUT_S)."}}, ClassVLLM, "startup-timeout", "TimeoutError: Timed out waiting for engine core processes to start. This is often caused by slow weight loading for large models. Waited 600s (configured by VLLM_ENGINE_READY_TIMEOUT_S)."},
		{"runner's health wait", Failure{Phase: "ready", Lines: []string{"ready: server not ready in time: http://127.0.0.1:8000 after 1h0m0s (last: connection refused)"}}, ClassVLLM, "startup-timeout", "ready: server not ready in time: http://127.0.0.1:8000 after 1h0m0s (last: connection refused)"},
		{"architecture", Failure{Phase: "ready", Lines: []string{"ValueError: Model architectures ['MiniMaxM3ForCausalLM'] are not supported for now. Supported architectures: dict_keys([...])"}}, ClassVLLM, "unsupported-architecture", "ValueError: Model architectures ['MiniMaxM3ForCausalLM'] are not supported for now. Supported architectures: dict_keys([...])"},
		{"quantization", Failure{Phase: "ready", Lines: []string{"ValueError: Unknown quantization method: mxfp8. Must be one of ['fp8', 'awq']."}}, ClassVLLM, "unsupported-quantization", "ValueError: Unknown quantization method: mxfp8. Must be one of ['fp8', 'awq']."},
		{"gated repo beats engine death", Failure{Phase: "ready", Lines: []string{
			"huggingface_hub.errors.GatedRepoError: 403 Client Error. (Request ID: Root=1-abc)",
			"Cannot access gated repo for url https://huggingface.co/org/model/resolve/main/config.json.",
			"RuntimeError: Engine core initialization failed. See root cause above.",
		}}, ClassModel, "hub-gated", "Cannot access gated repo for url https://huggingface.co/org/model/resolve/main/config.json."},
		{"repo not found", Failure{Phase: "ready", Lines: []string{"huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. (Request ID: Root=1-679e)", "Repository Not Found for url: https://huggingface.co/api/models/org/nope/revision/main."}}, ClassModel, "hub-not-found", "Repository Not Found for url: https://huggingface.co/api/models/org/nope/revision/main."},
		{"unauthorized", Failure{Phase: "ready", Lines: []string{"huggingface_hub.errors.HfHubHTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/api/models/org/m (Request ID: x)", "Invalid credentials in Authorization header"}}, ClassModel, "hub-unauthorized", "Invalid credentials in Authorization header"},
		{"remote code", Failure{Phase: "ready", Lines: []string{"ValueError: The repository org/m contains custom code which must be executed to correctly load the model. You can inspect the repository content at https://hf.co/org/m ."}}, ClassModel, "remote-code", "ValueError: The repository org/m contains custom code which must be executed to correctly load the model. You can inspect the repository content at https://hf.co/org/m ."},
		{"image pull on docker", Failure{Phase: "serve", Lines: []string{"Unable to find image 'vllm/vllm-openai:nightly-0123' locally", "docker: Error response from daemon: manifest unknown: manifest unknown."}}, ClassInfra, "image-pull", "docker: Error response from daemon: manifest unknown: manifest unknown."},
		{"disk full beats everything", Failure{Phase: "ready", Lines: []string{"OSError: [Errno 28] No space left on device", "RuntimeError: Engine core initialization failed. See root cause above."}}, ClassInfra, "disk-full", "OSError: [Errno 28] No space left on device"},
		{"tools install, no signature", Failure{Phase: "tools", Lines: []string{"ERROR: Could not find a version that satisfies the requirement lm-eval==0.4.12"}}, ClassHarness, "tools install failed", ""},
		{"pytest into the server's Python", Failure{Phase: "serve", Lines: []string{
			"serve failed: pytest: install into python3 (lock pytest-94b1f33c6dd58bda): python3 exited with code 1; last lines:",
			"ERROR: No matching distribution found for iniconfig==2.3.1",
		}}, ClassHarness, "server-pytest", "serve failed: pytest: install into python3 (lock pytest-94b1f33c6dd58bda): python3 exited with code 1; last lines:"},
		{"server died quietly", Failure{Phase: "ready", Lines: []string{"ready: server exited before it was ready"}}, ClassVLLM, "server did not start", ""},
		{"our gate phase", Failure{Phase: "gate", Lines: []string{"gate: read history: unexpected EOF"}}, ClassHarness, "phase gate failed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Classify(tt.f)
			want := Result{Class: tt.class, Signature: tt.sig, Line: tt.line, Phase: tt.f.Phase}
			if tt.line != "" {
				for _, s := range Signatures() {
					if s.Name == tt.sig {
						want.Source = s.Source
					}
				}
			}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Result{}, "ByRule")); diff != "" {
				t.Errorf("Classify() (-want +got):\n%s", diff)
			}
			if byRule := tt.line == ""; got.ByRule != byRule {
				t.Errorf("ByRule = %v, want %v", got.ByRule, byRule)
			}
		})
	}
}

// The causes the runner keeps from vLLM 0.26.0's own output on an H200
// (rootcause, job.serverDeath): the root cause decides and is the line.
func TestClassifyRecordedCauses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    Failure
		want Result
	}{
		{"engine without flashinfer", Failure{Phase: "ready",
			Lines: []string{"ready: server exited before it was ready: vllm exited with code 1"},
			Cause: "(EngineCore pid=1150) ModuleNotFoundError: No module named 'flashinfer'"},
			Result{Class: ClassVLLM, Signature: "vllm-import-error", Line: "(EngineCore pid=1150) ModuleNotFoundError: No module named 'flashinfer'", Source: sourceOf("vllm-import-error"), Phase: "ready"}},
		{"server killed mid-bench", Failure{Phase: "bench",
			Lines: []string{"bench failed: 512-in-128-out-conc-8: repetition 1: incomplete benchmark run: completed 0 of 64 prompts, 64 requests failed"},
			Cause: "the server died: vllm (APIServer pid=4540) killed by signal 9 (killed)"},
			Result{Class: ClassVLLM, Signature: "server-died", Line: "the server died: vllm (APIServer pid=4540) killed by signal 9 (killed)", Source: sourceOf("server-died"), Phase: "bench"}},
		{"an engine exception no signature knows", Failure{Phase: "ready",
			Lines: []string{"ready: server exited before it was ready: vllm exited with code 1", "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"},
			Cause: "(EngineCore pid=7) ValueError: rope_scaling must have a type"},
			// A known message elsewhere decides the class; the line stays
			// the root cause.
			Result{Class: ClassVLLM, Signature: "engine-core-died", Line: "(EngineCore pid=7) ValueError: rope_scaling must have a type", Source: sourceOf("engine-core-died"), Phase: "ready"}},
		{"an engine exception, nothing known", Failure{Phase: "ready",
			Lines: []string{"ready: server exited before it was ready: vllm exited with code 1"},
			Cause: "(EngineCore pid=7) ValueError: rope_scaling must have a type"},
			Result{Class: ClassVLLM, Signature: "server did not start", Line: "(EngineCore pid=7) ValueError: rope_scaling must have a type", Phase: "ready", ByRule: true}},
		{"the cause before the other lines", Failure{Phase: "ready",
			Lines: []string{"OSError: [Errno 28] No space left on device"},
			Cause: "(EngineCore pid=7) torch.OutOfMemoryError: CUDA out of memory."},
			Result{Class: ClassVLLM, Signature: "gpu-oom", Line: "(EngineCore pid=7) torch.OutOfMemoryError: CUDA out of memory.", Source: sourceOf("gpu-oom"), Phase: "ready"}},
		{"lm_eval's own import error is not vLLM's", Failure{Phase: "lm_eval",
			Cause: "ModuleNotFoundError: No module named 'sqlitedict'"},
			Result{Class: ClassHarness, Signature: "phase lm_eval failed", Line: "ModuleNotFoundError: No module named 'sqlitedict'", Phase: "lm_eval", ByRule: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, Classify(tt.f)); diff != "" {
				t.Errorf("Classify() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    summary.Summary
		want Result
	}{
		{"pass has no class", summary.Summary{Verdict: summary.VerdictPass}, Result{}},
		{"unverified has no class", summary.Summary{Verdict: summary.VerdictUnverified}, Result{}},
		{"canceled during load has no class", summary.Summary{Verdict: summary.VerdictError, Canceled: "received terminated",
			Problems: []string{"canceled: received terminated", "ready canceled: ready: wait for http://127.0.0.1:45487/health (last: connection refused): received terminated"},
			Phases:   []summary.Phase{{Name: summary.PhaseServe, Status: summary.StatusOK}, {Name: summary.PhaseReady, Status: summary.StatusCanceled, Error: "ready: wait for http://127.0.0.1:45487/health (last: connection refused): received terminated"}}},
			Result{Signature: "canceled"}},
		{"a failure before the cancel keeps its class", summary.Summary{Verdict: summary.VerdictError, Canceled: "received terminated",
			Phases: []summary.Phase{{Name: summary.PhaseReady, Status: summary.StatusFailed, Cause: "(EngineCore pid=1150) ModuleNotFoundError: No module named 'flashinfer'"}}},
			Result{Class: ClassVLLM, Signature: "vllm-import-error", Line: "(EngineCore pid=1150) ModuleNotFoundError: No module named 'flashinfer'", Source: sourceOf("vllm-import-error"), Phase: summary.PhaseReady}},
		{"accuracy before perf", summary.Summary{Verdict: summary.VerdictFail, Gates: []summary.GateResult{
			{Kind: summary.GateRegression, Verdict: summary.VerdictFail},
			{Kind: summary.GateAccuracy, Verdict: summary.VerdictFail},
		}}, Result{Class: ClassAccuracy, Signature: "accuracy gate"}},
		{"regression", summary.Summary{Verdict: summary.VerdictFail, Gates: []summary.GateResult{
			{Kind: summary.GateAccuracy, Verdict: summary.VerdictPass},
			{Kind: summary.GateRegression, Verdict: summary.VerdictFail},
		}}, Result{Class: ClassPerf, Signature: "regression gate"}},
		{"error in the first failed phase", summary.Summary{Verdict: summary.VerdictError, Phases: []summary.Phase{
			{Name: summary.PhaseTools, Status: summary.StatusOK},
			{Name: summary.PhaseReady, Status: summary.StatusFailed, Error: "ready: server exited before it was ready\ntorch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB."},
			{Name: summary.PhaseBench, Status: summary.StatusNotRun},
		}}, Result{Class: ClassVLLM, Signature: "gpu-oom", Line: "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB.", Source: sourceOf("gpu-oom"), Phase: summary.PhaseReady}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, Night(&tt.s)); diff != "" {
				t.Errorf("Night() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJob(t *testing.T) {
	t.Parallel()
	lost := -1
	one := 1
	tests := []struct {
		name   string
		state  string
		exit   *int
		reason string
		want   Class
	}{
		{"agent vanished", "failed", &lost, "", ClassInfra},
		{"k8s stack could not start the pod", "failed", nil, "stack_error", ClassInfra},
		{"expired unscheduled", "expired", nil, "", ClassInfra},
		{"step timeout", "timed_out", nil, "", ClassInfra},
		{"canceled by someone", "canceled", nil, "cancel", ClassNone},
		{"agent stopped under the job", "failed", &lost, "agent_stop", ClassInfra},
		{"agent refused it", "failed", &lost, "agent_refused", ClassInfra},
		{"signature not verified", "failed", &lost, "signature_rejected", ClassInfra},
		{"process could not start", "failed", &lost, "process_run_error", ClassInfra},
		{"canceled while the agent was lost", "canceled", &lost, "cancel", ClassNone},
		{"failed with no summary", "failed", &one, "", ClassHarness},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Job(tt.state, tt.exit, tt.reason); got.Class != tt.want {
				t.Errorf("Job(%q, %v, %q) = %+v, want class %q", tt.state, tt.exit, tt.reason, got, tt.want)
			}
		})
	}
}

// Every signature has a source, and none matches an ordinary log line.
func TestSignaturesAreSourcedAndQuiet(t *testing.T) {
	t.Parallel()
	ordinary := []string{
		"INFO 12-01 03:10:00 [api_server.py:1800] Starting vLLM API server 0 on http://127.0.0.1:8000",
		"INFO:     127.0.0.1:51234 - \"POST /v1/completions HTTP/1.1\" 200 OK",
		"Loading safetensors checkpoint shards: 100% Completed | 47/47 [02:10<00:00,  2.77s/it]",
		"runner: tools: lm-eval 0.4.12 reused (0.4 s)",
		"INFO 12-01 03:11:00 [gpu_worker.py:300] Available KV cache memory: 120.5 GiB",
	}
	for _, s := range Signatures() {
		if s.Source == "" || s.Name == "" || s.Class == ClassNone {
			t.Errorf("signature %+v lacks a name, class or source", s)
		}
	}
	if sig, line, ok := Match(ordinary); ok {
		t.Errorf("ordinary line %q matched %s", line, sig.Name)
	}
}

func sourceOf(name string) string {
	for _, s := range Signatures() {
		if s.Name == name {
			return s.Source
		}
	}
	return ""
}

// The cause a failed process left is read, and the recipe's blocked_by is
// named only for the engine's or the model's failures.
func TestNightCauseAndBlockedBy(t *testing.T) {
	t.Parallel()
	s := summary.Summary{Verdict: summary.VerdictError, Phases: []summary.Phase{
		{Name: summary.PhaseReady, Status: summary.StatusFailed, Error: "ready: server exited before it was ready",
			Cause: "(EngineCore_DP0 pid=412) RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"},
	}}
	got := Night(&s).Summary([]string{"vllm-project/vllm#45381"})
	want := &summary.Failure{Class: "vllm", Signature: "nccl", Phase: summary.PhaseReady, Source: sourceOf("nccl"),
		Line:      "(EngineCore_DP0 pid=412) RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
		BlockedBy: "vllm-project/vllm#45381"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Night().Summary() (-want +got):\n%s", diff)
	}
	tools := summary.Summary{Verdict: summary.VerdictError, Phases: []summary.Phase{{Name: summary.PhaseTools, Status: summary.StatusFailed, Error: "pip: exit status 1"}}}
	if f := Night(&tools).Summary([]string{"vllm-project/vllm#45381"}); f == nil || f.BlockedBy != "" || f.Class != "harness" {
		t.Errorf("a harness failure = %+v, want class harness without blocked_by", f)
	}
	if f := Night(&summary.Summary{Verdict: summary.VerdictPass}).Summary(nil); f != nil {
		t.Errorf("a pass = %+v, want nil", f)
	}
}
