package workloads

import (
	"fmt"
	"strings"
	"time"
)

// Recipe is one (model, GPU) combination, decoded and validated. Everything
// downstream takes this value, never the YAML.
type Recipe struct {
	// Path is the file the recipe came from, as given to the loader.
	Path             string
	Name             string
	GPU              string
	NumGPUs          int
	Nightly          bool
	TimeoutInMinutes int // 0: the pipeline default
	BenchOnly        bool
	// BlockedBy names what the recipe waits on outside our control, such as
	// an upstream PR; the generator keeps such recipes out of nightlies.
	BlockedBy []string

	VLLM   VLLM
	LMEval *LMEval
	Bench  *Bench
	BFCL   *BFCL
	AIPerf *AIPerf
}

// VLLM is how the server is started.
type VLLM struct {
	Model string
	Image string
	Env   []EnvVar
	// ServeArgs is the recipe's serve_args split into argv once, at load.
	ServeArgs []string
	// Serve is what the loader read out of ServeArgs.
	Serve ServeInfo
	// StartupTimeoutS is vllm.startup_timeout_s, 0 when unset; see
	// StartupTimeout.
	StartupTimeoutS int
	// Build is vllm.build: an image built on the host before the run.
	Build *Build
	// StartupRegression is vllm.startup_regression: the server's start-up
	// times judged against past nights as bench metrics are; nil when
	// the recipe does not opt in.
	StartupRegression *Regression
}

// EnvVar is one environment variable, in file order.
type EnvVar struct {
	Name  string
	Value string
}

// ServeInfo is what the loader understood of the serve arguments.
type ServeInfo struct {
	TP, DP, PP      int
	TrustRemoteCode bool
	ServedModelName string
	Speculative     *Speculative
	KVCacheDType    string
	ExpertParallel  bool
}

// Speculative is the speculative decoding set-up, if any.
type Speculative struct {
	Method    string
	Model     string
	NumTokens int
}

// Arg is one key=value model argument for lm_eval, with the value already
// in the form lm_eval parses (Python literals for booleans and null).
type Arg struct {
	Key   string
	Value string
}

// LMEval is the accuracy part.
type LMEval struct {
	ModelArgs []Arg
	Tasks     []Task
	// TimeoutMinutes bounds each task's lm_eval run; 0 means
	// DefaultLMEvalTimeout.
	TimeoutMinutes int
}

// Time limits of one lm_eval task and one BFCL category when the recipe
// sets none: well inside the step's default timeout, so that a hung tool
// ends with its own error, and the rest still runs and is published.
const (
	DefaultLMEvalTimeout = 60
	DefaultBFCLTimeout   = 30
)

// Task is one lm_eval task.
type Task struct {
	Name       string
	NumFewshot int
	ModelArgs  []Arg
	Expect     []Expectation
}

// Expectation is an accuracy gate on one task metric. Exactly one way of
// bounding is set: Min, Baseline (with Tolerance), or BaselineFrom.
type Expectation struct {
	Metric       string
	Min          *float64
	Baseline     *float64
	Tolerance    float64
	BaselineFrom string
	// Alpha is the significance level of the paired per-question test a
	// baseline_from gate runs on lm_eval's samples: DefaultAlpha unless the
	// recipe sets it, zero without baseline_from.
	Alpha float64
	Line  int
}

// DefaultAlpha is a baseline_from gate's significance level when the
// recipe sets none: a false alarm on one night in a hundred.
const DefaultAlpha = 0.01

// DefaultTimeout is a recipe step's timeout in minutes when the recipe
// sets none.
const DefaultTimeout = 120

// StepTimeout is the recipe's step timeout in minutes.
func (r *Recipe) StepTimeout() int {
	if r.TimeoutInMinutes > 0 {
		return r.TimeoutInMinutes
	}
	return DefaultTimeout
}

// Describe says what the expectation demands of its metric, as a reviewer
// reads it.
func (e Expectation) Describe() string {
	var parts []string
	if e.Min != nil {
		parts = append(parts, fmt.Sprintf(">= %g", *e.Min))
	}
	if e.Baseline != nil {
		parts = append(parts, fmt.Sprintf(">= %g (baseline %g - %g)", *e.Baseline-e.Tolerance, *e.Baseline, e.Tolerance))
	}
	if e.BaselineFrom != "" {
		parts = append(parts, fmt.Sprintf(">= the latest passing nightly of %s - %g", e.BaselineFrom, e.Tolerance))
		if e.Alpha > 0 {
			parts[len(parts)-1] += fmt.Sprintf("; per question when both runs logged samples: a drop beyond the tolerance fails only when McNemar's exact p < %g", e.Alpha)
		}
	}
	return e.Metric + " " + strings.Join(parts, " and ")
}

// Bench is the throughput part.
type Bench struct {
	Metadata   BenchMetadata
	Configs    []BenchConfig
	Regression *Regression
}

// BenchMetadata overrides what the loader derives for result metadata.
type BenchMetadata struct {
	Device    string
	TP        int
	Precision string
}

// BenchConfig is one `vllm bench serve` configuration; list-valued prompts
// and concurrency make it a sweep.
type BenchConfig struct {
	Name           string
	Backend        string
	Dataset        string
	InputLen       int
	OutputLen      int
	NumPrompts     []int
	MaxConcurrency []int
	Repetitions    int
	// Args are extra flags, normalized to --kebab-case, in file order.
	Args       []BenchArg
	Assertions []Assertion
	Regression *Regression
}

// BenchArg is one extra flag for `vllm bench serve`.
type BenchArg struct {
	Flag   string
	Values []string // none: a bare flag
}

// Assertion bounds one numeric key of a bench result.
type Assertion struct {
	Metric string
	Min    *float64
	Max    *float64
}

// Regression is the policy for comparing a night with its predecessors.
type Regression struct {
	Metrics []RegressionMetric
	// Nights is how many comparable passing nightlies the regression
	// detector judges tonight against.
	Nights int
	// MaxMissing is how many of the wanted nights may be missing before the
	// gate says "no baseline" instead of judging on too little;
	// Nights − MaxMissing is the fewest judged by.
	MaxMissing int
	// Accept, when set, is the accepted regression: the level from then on.
	Accept *Accept
	// NoRerun turns re-run on alarm off (rerun_on_alarm: false).
	NoRerun bool
}

// RegressionMetric is one metric and the drop it may show.
type RegressionMetric struct {
	Metric string
	// HigherIsBetter: throughput true, latency false.
	HigherIsBetter bool
	// MaxDropPct is the smallest worsening, in percent of the baseline,
	// that is flagged: the detector's floor, below which noise-sized
	// changes never fail.
	MaxDropPct float64
}

// BFCL is the function-calling benchmark part, run with bfcl-eval
// BFCLVersion. Zero values mean the runner's defaults.
type BFCL struct {
	// TestCategories are leaves or groups of BFCL, each one run.
	TestCategories   []string
	NumThreads       int
	Temperature      *float64
	MaximumStepLimit int
	// MaxTestCases caps the test entries of a category, split evenly over
	// the leaves of a group.
	MaxTestCases map[string]int
	// Gates are accuracy gates on bfcl_<category> acc, in file order.
	Gates []BFCLGate
	// TimeoutMinutes bounds each category's run; 0 means
	// DefaultBFCLTimeout.
	TimeoutMinutes int
}

// BFCLGate is one gate on the accuracy (a fraction) of a listed category or
// of a sub-category of a listed group.
type BFCLGate struct {
	Category string
	Expect   Expectation
}

// BFCLMetric is the metric BFCL results and gates use.
const BFCLMetric = "acc"

// BFCLResultName is the accuracy result of a BFCL category or
// sub-category: bfcl_<category>, as the system benchkite replaces names it.
func BFCLResultName(category string) string { return "bfcl_" + category }

// RegressionFor is the regression policy of config c: its own, else the
// bench-wide one, else nil.
func (b *Bench) RegressionFor(c *BenchConfig) *Regression {
	if c.Regression != nil {
		return c.Regression
	}
	return b.Regression
}

// LMEvalTimeout bounds one lm_eval task's run.
func (r *Recipe) LMEvalTimeout() time.Duration {
	if r.LMEval != nil && r.LMEval.TimeoutMinutes > 0 {
		return time.Duration(r.LMEval.TimeoutMinutes) * time.Minute
	}
	return DefaultLMEvalTimeout * time.Minute
}

// BFCLTimeout bounds one BFCL category's run.
func (r *Recipe) BFCLTimeout() time.Duration {
	if r.BFCL != nil && r.BFCL.TimeoutMinutes > 0 {
		return time.Duration(r.BFCL.TimeoutMinutes) * time.Minute
	}
	return DefaultBFCLTimeout * time.Minute
}
