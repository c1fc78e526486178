package classify

import "regexp"

// Signature is one message a tool writes when it fails in a known way.
// Source says where the text comes from, so that a reader can check it
// against the tool's code when the tool changes its wording.
type Signature struct {
	Class Class
	// Name is short and stable: it is what reports count and ingest sends.
	Name    string
	Pattern *regexp.Regexp
	Source  string
}

// signatures are tried in order and the first that matches any line
// decides. Causes come before their consequences: a full disk or a gated
// repository also kills the engine, so they are listed before the
// engine's own "initialization failed", which only says that it died.
var signatures = []Signature{
	// Infrastructure: the node, the cluster, the registry.
	{ClassInfra, "disk-full", regexp.MustCompile(`No space left on device`),
		"strerror(ENOSPC), as Python's OSError and most tools print it"},
	{ClassInfra, "node-oom-kill", regexp.MustCompile(`\bOOMKilled\b|Out of memory: Killed process`),
		"kubelet container termination reason OOMKilled; the Linux kernel's OOM killer (mm/oom_kill.c)"},
	{ClassInfra, "image-pull", regexp.MustCompile(`\bErrImagePull\b|\bImagePullBackOff\b|Failed to pull image|pull access denied|manifest unknown|Unable to find image '[^']+' locally`),
		"kubelet container waiting reasons and events (pkg/kubelet/images); docker CLI and daemon pull errors"},
	{ClassInfra, "pod-not-scheduled", regexp.MustCompile(`\bFailedScheduling\b|\b0/\d+ nodes are available\b|\bUnschedulable\b`),
		"kube-scheduler FailedScheduling events"},

	// The model: the Hub and the model's own code.
	{ClassModel, "hub-gated", regexp.MustCompile(`\bGatedRepoError\b|Cannot access gated repo for url`),
		"huggingface_hub utils/_http.py hf_raise_for_status (error code GatedRepo)"},
	{ClassModel, "hub-not-found", regexp.MustCompile(`\bRepositoryNotFoundError\b|Repository Not Found for url|\bRevisionNotFoundError\b|Revision Not Found for url|Entry Not Found for url`),
		"huggingface_hub utils/_http.py hf_raise_for_status (RepoNotFound, a 401 without valid credentials, RevisionNotFound, EntryNotFound)"},
	{ClassModel, "hub-unauthorized", regexp.MustCompile(`\b40[13] Client Error\b|Invalid credentials in Authorization header`),
		"huggingface_hub utils/_http.py: HfHubHTTPError for a 401 or 403 answer"},
	{ClassModel, "remote-code", regexp.MustCompile(`contains custom code which must be executed|Please pass the argument ` + "`" + `trust_remote_code=True` + "`" + `|set the option ` + "`" + `trust_remote_code=True` + "`"),
		"transformers dynamic_module_utils.py resolve_trust_remote_code"},

	// vLLM and the GPU stack under it.
	{ClassVLLM, "gpu-oom", regexp.MustCompile(`\bOutOfMemoryError\b|\b(CUDA|HIP) out of memory\b|No available memory for the cache blocks`),
		"PyTorch c10 caching allocator (torch.OutOfMemoryError: CUDA/HIP out of memory); vllm/v1/core/kv_cache_planning.py"},
	{ClassVLLM, "nccl", regexp.MustCompile(`\b[NR]CCL error\b|\bncclUnhandledCudaError\b|\bncclSystemError\b|\bncclInternalError\b|\bncclRemoteError\b|\bProcessGroupNCCL\b.*\b(timeout|Timeout|watchdog)`),
		"vllm/distributed/device_communicators/pynccl_wrapper.py (NCCL error: ...); NCCL's ncclResult_t names; torch ProcessGroupNCCL watchdog"},
	{ClassVLLM, "unsupported-architecture", regexp.MustCompile(`Model architectures \[.*\] are not supported for now`),
		"vllm/model_executor/models/registry.py"},
	{ClassVLLM, "unsupported-quantization", regexp.MustCompile(`Unknown quantization method: |is not supported for quantization method `),
		"vllm/config/model.py, vllm/config/vllm.py"},
	// The engine's own root cause, named with vLLM's process prefix: a
	// package the image lacks (vLLM 0.26.0 without flashinfer:
	// "(EngineCore pid=1150) ModuleNotFoundError: No module named 'flashinfer'").
	{ClassVLLM, "vllm-import-error", regexp.MustCompile(`^\((EngineCore|APIServer|Worker|VllmWorker)\S*( [^()]*)? pid=\d+\) (ModuleNotFoundError|ImportError)\b`),
		"Python's ModuleNotFoundError/ImportError raised in a vLLM process, as rootcause names it"},
	{ClassVLLM, "startup-timeout", regexp.MustCompile(`Timed out waiting for engine core processes to start|server not ready in time`),
		"vllm/v1/engine/core_client.py (VLLM_ENGINE_READY_TIMEOUT_S); the runner's own health wait (runner/internal/ready)"},
	// The server ended while a phase ran and printed no exception (a
	// SIGKILL): the runner's own words (runner/internal/job serverDeath).
	{ClassVLLM, "server-died", regexp.MustCompile(`^the server died: `),
		"runner/internal/job: the server process ended during the phase without an exception of its own"},
	{ClassVLLM, "engine-core-died", regexp.MustCompile(`Engine core initialization failed|EngineCore encountered an issue|\bEngineDeadError\b`),
		"vllm/v1/engine/utils.py (initialization), vllm/v1/engine/exceptions.py (EngineDeadError)"},

	// The runner's own steps inside a vLLM phase, last: a cause above
	// (a full disk) still wins.
	{ClassHarness, "server-pytest", regexp.MustCompile(`\bpytest: (ask |install into |pip installed it|.* cannot import pytest)`),
		"runner/internal/job/pytest.go: the pytest step in the server's Python, before the server starts"},
}

// Signatures is the table, for documentation and tests.
func Signatures() []Signature { return signatures }
