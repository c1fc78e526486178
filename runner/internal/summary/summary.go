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

// Gate kinds.
const (
	GateAccuracy   = "accuracy"
	GateBench      = "bench"
	GateRegression = "regression"
	// GateSpecDecode: a speculating recipe's run reported acceptance.
	GateSpecDecode = "spec_decode"
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

// BenchRun is the outcome of one benchmark configuration at one
// concurrency, the median over its repetitions.
type BenchRun struct {
	Name        string `json:"name"`
	Config      string `json:"config"`
	Concurrency int    `json:"concurrency"`
	NumPrompts  int    `json:"num_prompts"`
	InputLen    int    `json:"input_len,omitempty"`
	OutputLen   int    `json:"output_len,omitempty"`
	Repetitions int    `json:"repetitions"`
	// Reruns are the repetitions run again on alarm (counted in
	// Repetitions): the GPU time a flagged night cost.
	Reruns  int    `json:"reruns,omitempty"`
	Backend string `json:"backend,omitempty"`
	// Temperature is the bench's sampling temperature (0: greedy), which
	// speculative decoding's acceptance depends on.
	Temperature *float64 `json:"temperature,omitempty"`
	Status      string   `json:"status"`
	Error       string   `json:"error,omitempty"`
	File        string   `json:"file,omitempty"`

	RequestThroughput      float64 `json:"request_throughput"`
	OutputThroughput       float64 `json:"output_throughput"`
	TotalTokenThroughput   float64 `json:"total_token_throughput"`
	OutputThroughputPerGPU float64 `json:"output_throughput_per_gpu"`
	TotalThroughputPerGPU  float64 `json:"total_throughput_per_gpu"`

	TTFT Latency `json:"ttft_ms"`
	TPOT Latency `json:"tpot_ms"`
	ITL  Latency `json:"itl_ms"`
	E2EL Latency `json:"e2el_ms,omitzero"`

	SpecDecode *SpecDecode `json:"spec_decode,omitempty"`
	// Cost is what a million tokens cost at this run's throughput and the
	// profile's gpu_hour_price; nil without a price.
	Cost    *TokenCost         `json:"cost_per_mtok,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// RepetitionValues are the gated metrics' values of every repetition,
	// in order, when there were several: the regression detector judges
	// tonight by all of them, and people see their spread.
	RepetitionValues map[string][]float64 `json:"repetition_values,omitempty"`
}

// TokenCost is the cost of a million tokens, in the currency of the
// profile's gpu_hour_price, as InferenceX reports it: the GPUs' hourly
// price over the tokens of that kind an hour at the measured throughput.
// A kind with no throughput has no cost (nil).
type TokenCost struct {
	Input  *float64 `json:"input"`
	Output *float64 `json:"output"`
	Total  *float64 `json:"total"`
}

// PerMillionTokens is the cost of a million tokens made at tokPerSec on
// gpus GPUs of hourPrice each; nil when either is not positive.
func PerMillionTokens(hourPrice float64, gpus int, tokPerSec float64) *float64 {
	if hourPrice <= 0 || gpus <= 0 || tokPerSec <= 0 {
		return nil
	}
	c := hourPrice * float64(gpus) / (tokPerSec * 3600 / 1e6)
	return &c
}

// PriceTokens sets r.Cost from its throughputs; input throughput is the
// total less the output.
func (r *BenchRun) PriceTokens(hourPrice float64, gpus int) {
	if r.Status != StatusOK || hourPrice <= 0 || gpus <= 0 {
		return
	}
	c := &TokenCost{
		Input:  PerMillionTokens(hourPrice, gpus, r.TotalTokenThroughput-r.OutputThroughput),
		Output: PerMillionTokens(hourPrice, gpus, r.OutputThroughput),
		Total:  PerMillionTokens(hourPrice, gpus, r.TotalTokenThroughput),
	}
	if c.Input == nil && c.Output == nil && c.Total == nil {
		return
	}
	r.Cost = c
}

// Latency is one latency metric in milliseconds.
type Latency struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P99    float64 `json:"p99"`
}

// SpecDecode holds speculative-decoding acceptance statistics.
type SpecDecode struct {
	AcceptanceRate   float64   `json:"acceptance_rate"`
	AcceptanceLength float64   `json:"acceptance_length"`
	PerPosition      []float64 `json:"per_position,omitempty"`
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

// GateResult is the decision of one gate on one metric.
type GateResult struct {
	Kind     string   `json:"kind"`
	Subject  string   `json:"subject"`
	Metric   string   `json:"metric"`
	Value    *float64 `json:"value"` // nil (null) when not measured
	Bound    string   `json:"bound"`
	Baseline *float64 `json:"baseline,omitempty"`
	DeltaPct *float64 `json:"delta_pct,omitempty"`
	Verdict  string   `json:"verdict"`
	Message  string   `json:"message,omitempty"`
	// BaselineFrom is the recipe a baseline_from gate compares with, and
	// Tolerance the drop it allows: the report step judges it again when
	// that recipe ran in the same build.
	BaselineFrom string   `json:"baseline_from,omitempty"`
	Tolerance    *float64 `json:"tolerance,omitempty"`
	// Detector is what the regression detector saw (regression gates).
	Detector *Detector `json:"detector,omitempty"`
	// ChangePoint names where a flagged regression began.
	ChangePoint *ChangePoint `json:"change_point,omitempty"`
	// Alpha is a baseline_from gate's significance level for the paired
	// test; the report step uses it too.
	Alpha *float64 `json:"alpha,omitempty"`
	// Paired is the per-question test of a baseline_from gate, absent when
	// it was not run (the message then says why).
	Paired *Paired `json:"paired,omitempty"`
}

// Paired is a per-question comparison with another recipe's night:
// McNemar's exact test on the questions only one run got right.
type Paired struct {
	// Against names the night, "recipe #build".
	Against string `json:"against"`
	Pairs   int    `json:"pairs"`
	// Agreement is the share of pairs scored alike.
	Agreement float64 `json:"agreement"`
	// B is right only without speculation, C only with it.
	B     int     `json:"b"`
	C     int     `json:"c"`
	P     float64 `json:"p"`
	Alpha float64 `json:"alpha"`
	Delta float64 `json:"delta"`
	Fail  bool    `json:"fail"`
	// Unverified: too few questions paired to decide.
	Unverified bool   `json:"unverified,omitempty"`
	Why        string `json:"why"`
	// Note is set when the night ran another image than tonight.
	Note string `json:"note,omitempty"`
}

// Detector is the regression detector's reading of one metric: the
// spread it judged by, its threshold and why it did or did not flag.
// Percentages are of the baseline; worse is positive whatever the
// metric's direction.
type Detector struct {
	// Nights are the comparable past nights with the metric; Used of them
	// were kept and Outliers set aside.
	Nights   int `json:"nights"`
	Used     int `json:"used"`
	Outliers int `json:"outliers"`
	// Repetitions, RepMin and RepMax are tonight's values: their count
	// and range.
	Repetitions int     `json:"repetitions"`
	RepMin      float64 `json:"repetition_min"`
	RepMax      float64 `json:"repetition_max"`
	// Tonight is the geometric mean of the repetitions.
	Tonight float64 `json:"tonight"`
	// NoiseCVPct is the night-to-night coefficient of variation.
	NoiseCVPct float64 `json:"noise_cv_pct"`
	// FloorPct is the recipe's max_drop_pct; NoiseThresholdPct what the
	// noise allows; ThresholdPct the larger, what tonight alone needed.
	FloorPct          float64 `json:"floor_pct"`
	NoiseThresholdPct float64 `json:"noise_threshold_pct"`
	ThresholdPct      float64 `json:"threshold_pct"`
	WorsePct          float64 `json:"worse_pct"`
	// Rule is "single-night" or "two-night" when flagged.
	Rule string `json:"rule,omitempty"`
	// ReducedPower: judged on fewer nights than the detector was
	// calibrated with; a step is caught less often.
	ReducedPower bool   `json:"reduced_power,omitempty"`
	Why          string `json:"why"`
	// P is the p-value a build's false-alarm budget spends (1 below the
	// floor): tonight's up to the false-alarm rate, safe against heavy
	// tails below it (detect.Decision.P); Why gives tonight's own.
	// RegimeNights are the nights the level came from; Autocorr the
	// autocorrelation allowed for.
	P            float64 `json:"p,omitempty"`
	RegimeNights int     `json:"regime_nights,omitempty"`
	Autocorr     float64 `json:"autocorr,omitempty"`
	// OpenSince is the build a regression still open began with.
	OpenSince int `json:"open_since,omitempty"`
	// OpenLevel is the level an open regression is judged against (the
	// baseline the night it was caught), OpenWorsePct how much worse it
	// was then, OpenPassed the nights in a row it has passed since it was
	// last flagged: the next night carries them on, so the regression
	// stays red however long ago its good nights were.
	OpenLevel float64 `json:"open_level,omitempty"`
	// OpenLevelNights is how many nights OpenLevel is the median of.
	OpenLevelNights int     `json:"open_level_nights,omitempty"`
	OpenWorsePct    float64 `json:"open_worse_pct,omitempty"`
	OpenPassed      int     `json:"open_passed,omitempty"`
	// OpenHeld: the open regression was confirmed (its nights together
	// far off the level before), so it stays red until fixed or
	// accepted; OpenP is the smallest p-value its nights together have
	// had, the evidence a build's false-alarm budget weighs it by.
	OpenHeld bool    `json:"open_held,omitempty"`
	OpenP    float64 `json:"open_p,omitempty"`
	// Unconfirmed: tonight was worse by a gross margin with no night
	// before it as bad, as one night of a slow machine is; not failed,
	// the next night confirms it or not.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
	// Held: tonight is red for a confirmed open regression (OpenHeld),
	// not for a new alarm of its own.
	Held bool `json:"held,omitempty"`
	// Accepted is the recipe's regression.accept record, when it applies.
	Accepted string `json:"accepted,omitempty"`
}

// ChangePoint is where a flagged regression began: the last good and the
// first bad night of the series (past nights and tonight), and the
// `generator trigger` commands that would bisect between their vLLM
// commits.
type ChangePoint struct {
	LastGood NightRef `json:"last_good"`
	FirstBad NightRef `json:"first_bad"`
	// P is the t-test's p-value of the split; 0 with Found false.
	P float64 `json:"p"`
	// Found is false when no split was significant: then the last past
	// night and tonight are named.
	Found bool `json:"found"`
	// Before and After are the series' means on either side.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Bisect are command lines, present only when both commits are known.
	Bisect []string `json:"bisect,omitempty"`
	// Widened says the evidence was weak and the range holds a night more
	// on each side.
	Widened bool `json:"widened,omitempty"`
	// GoodRegime is what the detector judged against, cut at the last
	// good night: a bisect build is judged by it as tonight was.
	GoodRegime *Regime `json:"good_regime,omitempty"`
}

// Regime is a metric's nights up to the last good one, oldest first, with
// the known change points among them and the detector's settings.
type Regime struct {
	Nights         []float64 `json:"nights"`
	Known          []int     `json:"known,omitempty"`
	HigherIsBetter bool      `json:"higher_is_better"`
	FloorPct       float64   `json:"floor_pct"`
}

// NightRef names one night of a series.
type NightRef struct {
	Build       int     `json:"build,omitempty"` // 0 when unknown
	Tonight     bool    `json:"tonight,omitempty"`
	Value       float64 `json:"value"`
	ImageDigest string  `json:"image_digest,omitempty"`
	VLLMCommit  string  `json:"vllm_commit,omitempty"`
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
