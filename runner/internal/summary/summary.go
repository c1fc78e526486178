package summary

import (
	"sort"
	"time"
)

// SchemaVersion is the version of the summary.json layout this package
// writes. It changes only when a field is removed, renamed or changes
// meaning; added fields keep the version.
const SchemaVersion = 1

// Verdicts of a whole run (Summary.Verdict) and of a single gate
// (GateResult.Verdict).
const (
	VerdictPass = "pass"
	VerdictFail = "fail"
	// VerdictError: a run or a gate that could not be judged (a planned
	// phase, value or gate is missing).
	VerdictError = "error"
	// VerdictUnverified: a run whose measured values passed, but something
	// planned could not be checked (a gate had no baseline, or speculative
	// decoding was configured and reported no acceptance).
	VerdictUnverified = "unverified"  // Summary only
	VerdictNoBaseline = "no-baseline" // GateResult only
	VerdictSkipped    = "skipped"     // GateResult only: its subject was not planned
)

// Statuses of a phase, a bench run or an accuracy task.
const (
	StatusOK     = "ok"
	StatusFailed = "failed"
	// StatusSkipped: not planned for this run (bench only, an attached
	// server); not an error.
	StatusSkipped = "skipped"
	// StatusNotRun: planned, but an earlier failure (the server died, was
	// never ready) kept it from running; the run is an error.
	StatusNotRun   = "not-run"
	StatusCanceled = "canceled"
)

// Phase names, in the order the runner goes through them.
const (
	PhaseTools   = "tools"
	PhaseServe   = "serve"
	PhaseReady   = "ready"
	PhaseBench   = "bench"
	PhaseAIPerf  = "aiperf"
	PhaseLMEval  = "lm_eval"
	PhaseBFCL    = "bfcl"
	PhaseGate    = "gate"
	PhasePublish = "publish"
)

// Summary is the content of results/<name>/summary.json.
type Summary struct {
	SchemaVersion int    `json:"schema_version"`
	Recipe        string `json:"recipe"`
	GPU           string `json:"gpu"`
	Device        string `json:"device,omitempty"`
	NumGPUs       int    `json:"num_gpus"`
	TP            int    `json:"tp,omitempty"`
	DP            int    `json:"dp,omitempty"`
	Precision     string `json:"precision,omitempty"`
	// PrecisionGuessed: neither the model name nor the recipe's metadata
	// said the precision; Precision is an assumption.
	PrecisionGuessed bool   `json:"precision_guessed,omitempty"`
	Model            string `json:"model"`
	Image            string `json:"image,omitempty"`
	// ImageTag and ImageDigest split Image: the tag the build asked for
	// and the digest the generator pinned it to ("" when not pinned).
	ImageTag    string `json:"image_tag,omitempty"`
	ImageDigest string `json:"image_digest,omitempty"`
	VLLMCommit  string `json:"vllm_commit,omitempty"`
	// Fingerprint is what makes this run's numbers comparable with
	// another's; history compares only nights with the same one.
	Fingerprint *Fingerprint `json:"fingerprint,omitempty"`
	// Attached is the server measured when the run started none
	// (--base-url): its image is not known to be Image.
	Attached string `json:"attached,omitempty"`
	// Series says where the recipe last changed within the nights a
	// trend shows ("the recipe changed at build #N: serve args"): a known
	// change point; tonight is still judged against the nights before
	// it, but for a bench run whose own shape changed.
	Series string `json:"series,omitempty"`

	Buildkite  *BuildkiteInfo `json:"buildkite,omitempty"`
	Tools      *Tools         `json:"tools,omitempty"`
	ModelCache *ModelCache    `json:"model_cache,omitempty"`
	// Startup is the server's start-up, split as vLLM logs it; absent for
	// an attached server and one that never became ready.
	Startup *Startup `json:"startup,omitempty"`
	// ServerPytest is the pytest step before the server started.
	ServerPytest *ServerPytest `json:"server_pytest,omitempty"`

	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Verdict  string    `json:"verdict"`
	// Canceled is why the run was stopped before its end ("received
	// terminated"); "" when it was not. A canceled run's verdict is error.
	Canceled string `json:"canceled,omitempty"`
	// Problems are what kept the verdict from pass other than a failed
	// gate: each names the phase, metric, file or key; optional.
	Problems []string `json:"problems,omitempty"`
	// Failure says why a red night was red; nil for a pass or an
	// unverified run.
	Failure *Failure `json:"failure,omitempty"`
	// GPUTime is what the run held its GPUs for, by phase.
	GPUTime *GPUTime `json:"gpu_time,omitempty"`

	Phases   []Phase      `json:"phases"`
	Bench    []BenchRun   `json:"bench"`
	Accuracy []TaskResult `json:"accuracy"`
	Gates    []GateResult `json:"gates"`
	// Provenance is how to re-run this run (manifest.json's content).
	Provenance *Provenance `json:"provenance,omitempty"`
}

// Failure is a red night's class (infra, harness, vllm, model, accuracy,
// perf) and what decided it: a known message of a tool, with its line and
// where the text comes from, or a rule.
type Failure struct {
	Class     string `json:"class"`
	Signature string `json:"signature"`
	Line      string `json:"line,omitempty"`
	Source    string `json:"source,omitempty"`
	Phase     string `json:"phase,omitempty"`
	// BlockedBy names the recipe's blocked_by when the failure is of the
	// kind it waits on (vllm or model): an expected red.
	BlockedBy string `json:"blocked_by,omitempty"`
}

// GPUTime is GPUs × wall time, in GPU-seconds. Phases are tools, load
// (serve and ready), bench, lm_eval, bfcl and teardown (from the end of
// the last phase before it to the gates).
type GPUTime struct {
	GPUs   int                `json:"gpus"`
	Phases map[string]float64 `json:"phases_gpu_s"`
	// Total is the whole run, start to finish.
	Total float64 `json:"total_gpu_s"`
	// Lost is Total for a run that could not be judged (failed or
	// canceled): GPU time that bought no verdict.
	Lost float64 `json:"lost_gpu_s,omitempty"`
	// Saved is what skipping bench points after a failed canary point
	// saved, estimated from the canary's own time.
	Saved float64 `json:"saved_gpu_s,omitempty"`
	// HourPrice is the profile's gpu_hour_price, 0 when unset.
	HourPrice float64 `json:"gpu_hour_price,omitempty"`
	// BisectBudget is the profile's bisect_gpu_hours: 0 when a regression
	// of this recipe is not bisected automatically.
	BisectBudget float64 `json:"bisect_gpu_h,omitempty"`
	// Retried is the GPU time of the step's earlier tries, retried by hand
	// or automatically, and RetriedTries how many, by class ("" for a
	// cancel): the report step adds them from the Buildkite API's jobs.
	Retried      float64        `json:"retried_gpu_s,omitempty"`
	RetriedTries map[string]int `json:"retried_tries,omitempty"`
}

// BuildkiteInfo identifies the Buildkite job that produced a summary.
type BuildkiteInfo struct {
	BuildID     string `json:"build_id,omitempty"`
	BuildNumber string `json:"build_number,omitempty"`
	BuildURL    string `json:"build_url,omitempty"`
	JobID       string `json:"job_id,omitempty"`
	StepKey     string `json:"step_key,omitempty"`
	Branch      string `json:"branch,omitempty"`
	// BaselineBranch is the branch whose scheduled builds are the nights
	// this run is judged against (BENCHKITE_BASELINE_BRANCH, else the
	// pipeline's default branch): on a pull request's build not Branch.
	// Empty when unknown.
	BaselineBranch string `json:"baseline_branch,omitempty"`
	Commit         string `json:"commit,omitempty"`
	Source         string `json:"source,omitempty"`
	// PullRequest is the pull request number, "false" or empty when the
	// build is not one's.
	PullRequest string `json:"pull_request,omitempty"`
}

// ModelCache is where the model came from: the profile's cache, whether
// it outlives the job, and what this run added to it while the server
// started (a download, when DownloadedBytes > 0).
type ModelCache struct {
	Dir        string `json:"dir"`
	Backing    string `json:"backing"`
	Persistent bool   `json:"persistent"`
	// DownloadedBytes is how much the cache grew from the server's start
	// to ready; -1 when it could not be measured.
	DownloadedBytes int64 `json:"downloaded_bytes"`
	// ReadySeconds is the server's start to ready, the download included.
	ReadySeconds float64 `json:"ready_seconds,omitempty"`
}

// Startup is the server's time to ready, split as vLLM's log says it.
// Each part is absent when the log did not say it (an older vLLM, a part
// the model skipped: no torch.compile under --enforce-eager).
type Startup struct {
	// ReadySeconds is from the server's process start to /health and
	// /v1/models answering, on the runner's clock.
	ReadySeconds float64 `json:"ready_s"`
	// WeightsSeconds: "Loading weights took X seconds".
	WeightsSeconds *float64 `json:"weights_load_s,omitempty"`
	// ModelLoadSeconds: "Model loading took … GiB and X seconds" (the
	// weights included).
	ModelLoadSeconds *float64 `json:"model_load_s,omitempty"`
	// TorchCompileSeconds: "torch.compile took X s in total".
	TorchCompileSeconds *float64 `json:"torch_compile_s,omitempty"`
	// CUDAGraphsSeconds: "Graph capturing finished in X secs".
	CUDAGraphsSeconds *float64 `json:"cuda_graphs_s,omitempty"`
	// EngineInitSeconds: "init engine (profile, create kv cache, warmup
	// model) took X s" (torch.compile and the graphs included).
	EngineInitSeconds *float64 `json:"engine_init_s,omitempty"`
}

// Metrics are the values s has, by key (workloads.StartupMetrics).
func (s *Startup) Metrics() map[string]float64 {
	out := map[string]float64{}
	if s == nil {
		return out
	}
	if s.ReadySeconds > 0 {
		out["ready_s"] = s.ReadySeconds
	}
	for k, v := range map[string]*float64{"weights_load_s": s.WeightsSeconds, "model_load_s": s.ModelLoadSeconds,
		"torch_compile_s": s.TorchCompileSeconds, "cuda_graphs_s": s.CUDAGraphsSeconds, "engine_init_s": s.EngineInitSeconds} {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// ServerPytest is pytest in the server's Python, which torch.compile
// needs (it imports cupy's testing helpers) in the CUDA nightlies: left
// alone when it imports, else installed from its lock before the server
// starts.
type ServerPytest struct {
	// Python is the interpreter, as run: a path, or natively "python3";
	// in a container, "docker exec NAME python3".
	Python string `json:"python"`
	// Action is "skipped" (pytest imported; nothing installed) or
	// "installed".
	Action string `json:"action"`
	// Version is pytest's version, as the interpreter imports it after
	// the step.
	Version string `json:"version"`
	// Installed are the distributions installed, name==version.
	Installed       []string `json:"installed,omitempty"`
	DurationSeconds float64  `json:"duration_s"`
}

// Pytest step actions.
const (
	PytestSkipped   = "skipped"
	PytestInstalled = "installed"
)

// Tools says how the evaluation tools (lm-eval, bfcl-eval) were found.
type Tools struct {
	Mode            string            `json:"mode"`           // venv, user or path
	Lock            string            `json:"lock,omitempty"` // the tool set and its lock's hash, name-hash
	Versions        map[string]string `json:"versions,omitempty"`
	Reused          bool              `json:"reused,omitempty"`
	DurationSeconds float64           `json:"duration_s"` // install or check time
}

// Phase records one step of the runner.
type Phase struct {
	Name     string    `json:"name"`
	Status   string    `json:"status"`
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	Error    string    `json:"error,omitempty"`
	// Cause is why the phase's failed process failed, in its own words:
	// the last error lines of its output (a traceback's last line, an
	// out-of-memory message), capped.
	Cause string `json:"cause,omitempty"`
}

// TaskResult is the outcome of one lm_eval task.
type TaskResult struct {
	Task       string             `json:"task"`
	NumFewshot int                `json:"num_fewshot"`
	Status     string             `json:"status"`
	Error      string             `json:"error,omitempty"`
	Metrics    map[string]float64 `json:"metrics,omitempty"`
	Stderr     map[string]float64 `json:"stderr,omitempty"`
	Samples    int                `json:"samples,omitempty"`
	File       string             `json:"file,omitempty"`
	// Entry is the run that measured it: an lm_eval task entry's folder
	// (contract.TaskDirs) or "bfcl/<category>" of the BFCL run. A gate
	// judges its own entry's result, never another of the same name.
	Entry string `json:"entry,omitempty"`
}

// Phase returns the phase called name, or nil if there is none. The pointer
// refers into s.Phases and is valid until the slice is next appended to.
func (s *Summary) Phase(name string) *Phase {
	for i := range s.Phases {
		if s.Phases[i].Name == name {
			return &s.Phases[i]
		}
	}
	return nil
}

// SortedKeys are the names of metrics in order, for stable output.
func SortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
