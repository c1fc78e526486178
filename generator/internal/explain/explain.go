// Package explain is what `generator explain` shows of a resolved recipe:
// the decisions (device, parallelism, precision, queue, image) with what
// decided each, the exact vllm serve argv and env, every expanded bench
// run, lm_eval task and BFCL category with its gates, as text or JSON.
package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/shell"
	"github.com/benchkite/benchkite/internal/toollocks"
	"github.com/benchkite/benchkite/workloads"
)

// explainPort is the port shown in the serve argv: the runner's outside a
// Buildkite job. In a job the port is the job's own (20000 + cksum(job id)
// % 40000), which no explanation ahead of the build can know.
const explainPort = 8000

// Explanation is the resolved recipe as shown to people and machines.
type Explanation struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	GPU       string `json:"gpu"`
	NumGPUs   int    `json:"num_gpus"`
	Device    string `json:"device"`
	TP        int    `json:"tp"`
	DP        int    `json:"dp"`
	PP        int    `json:"pp"`
	Precision string `json:"precision"`
	// PrecisionSource is where Precision came from; "guessed" when
	// nothing said.
	PrecisionSource string            `json:"precision_source"`
	Queue           string            `json:"queue"`
	QueueSource     string            `json:"queue_source"`
	Runtime         string            `json:"runtime"`
	ModelCache      agents.ModelCache `json:"model_cache"`
	// ModelCode is where the processes that run model code run and what
	// they can read there.
	ModelCode   string           `json:"model_code"`
	Image       string           `json:"image"`
	ImageSource string           `json:"image_source"`
	ImageNote   string           `json:"image_note,omitempty"`
	VLLMCommit  string           `json:"vllm_commit,omitempty"`
	Nightly     bool             `json:"nightly"`
	BenchOnly   bool             `json:"bench_only"`
	BlockedBy   []string         `json:"blocked_by,omitempty"`
	Timeout     int              `json:"timeout_in_minutes"`
	Speculative *specExplanation `json:"speculative,omitempty"`
	ServeArgv   []string         `json:"serve_argv"`
	ServeEnv    []envExplanation `json:"serve_env"`
	BenchRuns   []benchRunExpl   `json:"bench_runs"`
	BenchGates  []string         `json:"bench_gates,omitempty"`
	Tasks       []taskExpl       `json:"lm_eval_tasks"`
	BFCL        []bfclExpl       `json:"bfcl_categories"`
	BFCLVersion string           `json:"bfcl_version,omitempty"`
	Tools       *toolsExpl       `json:"tools,omitempty"`
	// StartupTimeoutS is how long the server may take to answer.
	StartupTimeoutS int `json:"startup_timeout_s"`
	// EngineReadyTimeoutS is the recipe's own VLLM_ENGINE_READY_TIMEOUT_S,
	// which vLLM gets instead of StartupTimeoutS; 0 when unset.
	EngineReadyTimeoutS int `json:"engine_ready_timeout_s,omitempty"`
	// StartupGates are vllm.startup_regression's gates, as a reviewer
	// reads them.
	StartupGates []string          `json:"startup_gates,omitempty"`
	AgentTags    map[string]string `json:"agent_tags,omitempty"`
	Build        *buildExpl        `json:"build,omitempty"`
	AIPerf       []aiperfExpl      `json:"aiperf,omitempty"`
}

type specExplanation struct {
	Method    string `json:"method"`
	Model     string `json:"model,omitempty"`
	NumTokens int    `json:"num_speculative_tokens,omitempty"`
}

type envExplanation struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type benchRunExpl struct {
	Name        string   `json:"name"`
	Backend     string   `json:"backend"`
	Dataset     string   `json:"dataset,omitempty"`
	InputLen    int      `json:"input_len"`
	OutputLen   int      `json:"output_len"`
	NumPrompts  int      `json:"num_prompts"`
	Concurrency int      `json:"max_concurrency"`
	Repetitions int      `json:"repetitions"`
	Args        []string `json:"args"`
}

type taskExpl struct {
	Name       string   `json:"name"`
	NumFewshot int      `json:"num_fewshot"`
	ModelArgs  string   `json:"model_args"`
	Gates      []string `json:"gates,omitempty"`
}

// bfclExpl is one BFCL category run as the recipe sets it; zero settings
// are the runner's defaults, and the runner's env may override the step
// limit and max_test_cases.
type bfclExpl struct {
	Category         string   `json:"category"`
	SubCategories    []string `json:"sub_categories,omitempty"`
	NumThreads       int      `json:"num_threads,omitempty"`
	Temperature      *float64 `json:"temperature,omitempty"`
	MaximumStepLimit int      `json:"maximum_step_limit,omitempty"`
	MaxTestCases     int      `json:"max_test_cases,omitempty"`
	Gates            []string `json:"gates,omitempty"`
}

func New(res *workloads.Resolved, getenv func(string) string) Explanation {
	r := res.Recipe
	ex := Explanation{
		Name: r.Name, Path: r.Path, GPU: r.GPU, NumGPUs: r.NumGPUs,
		Device: res.Device, TP: res.TP, DP: res.DP, PP: res.PP, Precision: res.Precision, PrecisionSource: res.PrecisionSource,
		Queue: res.Queue, QueueSource: res.QueueSource, Runtime: string(res.Profile.Runtime),
		ModelCode: res.Profile.ModelCode(),
		Image:     res.Image.Image, ImageSource: res.Image.Source, ImageNote: res.Image.Note, VLLMCommit: res.Image.Commit,
		Nightly: r.Nightly, BenchOnly: r.BenchOnly, BlockedBy: r.BlockedBy, Timeout: r.StepTimeout(),
		ServeArgv: res.ServeArgv(explainPort),
		ServeEnv:  []envExplanation{},
		BenchRuns: []benchRunExpl{},
		Tasks:     []taskExpl{},
		BFCL:      []bfclExpl{},
	}
	ex.parity(res)
	if mc, err := res.Profile.ModelCache(getenv); err == nil {
		ex.ModelCache = mc
	} else {
		ex.ModelCache = agents.ModelCache{Dir: res.Profile.HFCacheDir(), Backing: err.Error()}
	}
	if sp := r.VLLM.Serve.Speculative; sp != nil {
		ex.Speculative = &specExplanation{Method: sp.Method, Model: sp.Model, NumTokens: sp.NumTokens}
	}
	for _, e := range res.Env {
		ex.ServeEnv = append(ex.ServeEnv, envExplanation{Name: e.Name, Value: e.Value})
	}
	for _, b := range res.BenchRuns {
		ex.BenchRuns = append(ex.BenchRuns, benchRunExpl{Name: b.Name, Backend: b.Backend, Dataset: textDataset(b.Dataset), InputLen: b.InputLen, OutputLen: b.OutputLen,
			NumPrompts: b.NumPrompts, Concurrency: b.Concurrency, Repetitions: b.Repetitions, Args: append([]string{}, b.Args...)})
	}
	if r.Bench != nil {
		ex.BenchGates = benchGates(r.Bench)
	}
	ex.StartupGates = startupGates(r.VLLM.StartupRegression)
	for _, t := range res.Tasks {
		te := taskExpl{Name: t.Name, NumFewshot: t.NumFewshot, ModelArgs: modelArgsString(t.ModelArgs)}
		for _, e := range t.Expect {
			te.Gates = append(te.Gates, e.Describe())
		}
		ex.Tasks = append(ex.Tasks, te)
	}
	if b := res.BFCL; b != nil {
		ex.BFCLVersion = workloads.BFCLVersion
		for _, c := range b.TestCategories {
			be := bfclExpl{Category: c, NumThreads: b.NumThreads, Temperature: b.Temperature,
				MaximumStepLimit: b.MaximumStepLimit, MaxTestCases: b.MaxTestCases[c]}
			if workloads.BFCLIsGroup(c) {
				be.SubCategories, _ = workloads.BFCLLeaves(c)
			}
			for _, g := range b.Gates {
				if g.Category == c || slices.Contains(be.SubCategories, g.Category) {
					be.Gates = append(be.Gates, workloads.BFCLResultName(g.Category)+" "+g.Expect.Describe())
				}
			}
			ex.BFCL = append(ex.BFCL, be)
		}
	}
	ex.Tools = toolsOf(res, getenv)
	return ex
}

// toolsExpl is where the runner keeps the recipe's evaluation tools: one
// venv per locked tool set, named by the lock's hash.
type toolsExpl struct {
	Lock       string `json:"lock"`
	Dir        string `json:"dir"`
	Persistent bool   `json:"persistent"`
	Note       string `json:"note"`
}

func toolsOf(res *workloads.Resolved, getenv agents.Env) *toolsExpl {
	if res.Recipe.BenchOnly || (len(res.Tasks) == 0 && res.BFCL == nil) {
		return nil
	}
	key := toollocks.For(res.BFCL != nil).Key()
	place, err := res.Profile.Tools(getenv)
	if err != nil {
		return &toolsExpl{Lock: key, Note: err.Error()}
	}
	dir := place.Dir
	if dir == "" {
		dir = "$HOME/.cache/benchkite/tools"
	}
	return &toolsExpl{Lock: key, Dir: dir + "/" + key, Persistent: place.Persistent, Note: place.Why}
}

// settings says how a BFCL category runs, as the recipe decides it.
func (b bfclExpl) settings() string {
	parts := []string{"threads default", "temperature default", "step limit default"}
	if b.NumThreads > 0 {
		parts[0] = fmt.Sprintf("%d threads", b.NumThreads)
	}
	if b.Temperature != nil {
		parts[1] = fmt.Sprintf("temperature %g", *b.Temperature)
	}
	if b.MaximumStepLimit > 0 {
		parts[2] = fmt.Sprintf("step limit %d", b.MaximumStepLimit)
	}
	switch {
	case b.MaxTestCases > 0 && len(b.SubCategories) > 1:
		parts = append(parts, fmt.Sprintf("first %d test entries split over %d sub-categories, partial evaluation", b.MaxTestCases, len(b.SubCategories)))
	case b.MaxTestCases > 0:
		parts = append(parts, fmt.Sprintf("first %d test entries, partial evaluation", b.MaxTestCases))
	default:
		parts = append(parts, "every test entry")
	}
	return strings.Join(parts, ", ")
}

// benchGates describes the assertions and regression policies of every
// bench config, as a reviewer reads them.
func benchGates(b *workloads.Bench) []string {
	var out []string
	for _, c := range b.Configs {
		for _, a := range c.Assertions {
			var bounds []string
			if a.Min != nil {
				bounds = append(bounds, fmt.Sprintf(">= %g", *a.Min))
			}
			if a.Max != nil {
				bounds = append(bounds, fmt.Sprintf("<= %g", *a.Max))
			}
			out = append(out, fmt.Sprintf("%s: %s %s", c.Name, a.Metric, strings.Join(bounds, " and ")))
		}
		policy := b.RegressionFor(&c)
		if policy == nil {
			continue
		}
		for _, m := range policy.Metrics {
			dir := "higher"
			if !m.HigherIsBetter {
				dir = "lower"
			}
			out = append(out, fmt.Sprintf("%s: %s flagged when over %g%% worse and beyond the noise of the last %d comparable nights (%s is better; judged from %d nights)",
				c.Name, m.Metric, m.MaxDropPct, policy.Nights, dir, policy.Nights-policy.MaxMissing))
		}
	}
	return out
}

// startupGates describes vllm.startup_regression: each start-up time,
// judged by the detector against past nights.
func startupGates(policy *workloads.Regression) []string {
	if policy == nil {
		return nil
	}
	var out []string
	for _, m := range policy.Metrics {
		out = append(out, fmt.Sprintf("%s: %s flagged when over %g%% longer and beyond the noise of the last %d comparable nights (lower is better; judged from %d nights)",
			workloads.StartupSubject, m.Metric, m.MaxDropPct, policy.Nights, policy.Nights-policy.MaxMissing))
	}
	return out
}

func modelArgsString(args []workloads.Arg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.Key + "=" + a.Value
	}
	return strings.Join(parts, ",")
}

// WriteText writes the explanation for people: the recipe's settings
// and where each came from, the serve argv and env, then what it runs.
func (ex Explanation) WriteText(w io.Writer) error {
	if err := ex.writeSettings(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nserve argv\n  %s\n", shell.Join(ex.ServeArgv))
	fmt.Fprintln(w, "\nserve env")
	for _, e := range ex.ServeEnv {
		fmt.Fprintf(w, "  %s=%s\n", e.Name, shell.Quote(e.Value))
	}
	if err := ex.writeBench(w); err != nil {
		return err
	}
	ex.writeTasks(w)
	ex.writeBFCL(w)
	ex.writeAIPerf(w)
	return nil
}

// writeSettings is one row per setting, aligned.
func (ex Explanation) writeSettings(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("recipe", fmt.Sprintf("%s (%s)", ex.Name, ex.Path))
	row("gpu", fmt.Sprintf("%s × %d (device %s)", ex.GPU, ex.NumGPUs, ex.Device))
	row("parallel", fmt.Sprintf("TP %d × DP %d × PP %d", ex.TP, ex.DP, ex.PP))
	switch ex.PrecisionSource {
	case workloads.PrecisionGuessed:
		row("precision", ex.Precision+" (guessed: the model name does not say; set vllm_bench.metadata.precision)")
	case "":
		row("precision", ex.Precision)
	default:
		row("precision", fmt.Sprintf("%s (from %s)", ex.Precision, ex.PrecisionSource))
	}
	row("queue", fmt.Sprintf("%s (from %s)", ex.Queue, ex.QueueSource))
	row("runtime", ex.Runtime)
	persist := "not kept after the job: every job downloads the model again"
	if ex.ModelCache.Persistent {
		persist = "kept on the node between jobs"
	}
	row("model cache", fmt.Sprintf("%s on %s, %s", ex.ModelCache.Dir, ex.ModelCache.Backing, persist))
	if ex.ModelCache.Note != "" {
		row("", ex.ModelCache.Note)
	}
	row("model code", ex.ModelCode)
	row("image", fmt.Sprintf("%s (from %s)", ex.Image, ex.ImageSource))
	if ex.ImageNote != "" {
		row("", ex.ImageNote)
	}
	commit := ex.VLLMCommit
	if commit == "" {
		commit = "unknown (image tag names no commit)"
	}
	row("vllm commit", commit)
	row("nightly", fmt.Sprint(ex.Nightly))
	if t := ex.Tools; t != nil {
		row("tools venv", fmt.Sprintf("%s (%s)", t.Dir, t.Note))
	}
	if ex.BenchOnly {
		row("bench only", "true")
	}
	if len(ex.BlockedBy) > 0 {
		row("blocked by", strings.Join(ex.BlockedBy, ", "))
	}
	row("timeout", fmt.Sprintf("%d min", ex.Timeout))
	ex.parityRows(row)
	if sp := ex.Speculative; sp != nil {
		s := sp.Method
		if sp.Model != "" {
			s += ", drafter " + sp.Model
		}
		if sp.NumTokens > 0 {
			s += fmt.Sprintf(", %d tokens", sp.NumTokens)
		}
		row("speculative", s)
	}
	return tw.Flush()
}

// writeBench is the bench runs, a table, and their gates.
func (ex Explanation) writeBench(w io.Writer) error {
	if len(ex.BenchRuns) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nbench runs")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tBACKEND\tIN\tOUT\tPROMPTS\tCONC\tREPS\tEXTRA ARGS")
	for _, b := range ex.BenchRuns {
		extra := shell.Join(b.Args)
		if extra == "" {
			extra = "-"
		}
		in := fmt.Sprint(b.InputLen)
		if b.Dataset != "" {
			in = b.Dataset // real prompts: their own lengths
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", b.Name, b.Backend, in, b.OutputLen, b.NumPrompts, b.Concurrency, b.Repetitions, extra)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, g := range ex.BenchGates {
		fmt.Fprintf(w, "  gate  %s\n", g)
	}
	return nil
}

// writeTasks is the lm_eval tasks with their model args and gates.
func (ex Explanation) writeTasks(w io.Writer) {
	if len(ex.Tasks) == 0 {
		return
	}
	fmt.Fprintln(w, "\nlm_eval tasks")
	for _, t := range ex.Tasks {
		fmt.Fprintf(w, "  %s, %d-shot\n    model_args %s\n", t.Name, t.NumFewshot, t.ModelArgs)
		for _, g := range t.Gates {
			fmt.Fprintf(w, "    gate       %s\n", g)
		}
	}
}

// writeBFCL is the BFCL categories with their settings and gates.
func (ex Explanation) writeBFCL(w io.Writer) {
	if len(ex.BFCL) == 0 {
		return
	}
	fmt.Fprintf(w, "\nbfcl categories (bfcl-eval %s; env BFCL_MAXIMUM_STEP_LIMIT and BFCL_MAX_TEST_CASES override)\n", ex.BFCLVersion)
	for _, b := range ex.BFCL {
		if len(b.SubCategories) > 0 {
			fmt.Fprintf(w, "  %s (%s)\n", b.Category, strings.Join(b.SubCategories, ", "))
		} else {
			fmt.Fprintf(w, "  %s\n", b.Category)
		}
		fmt.Fprintf(w, "    settings   %s\n", b.settings())
		for _, g := range b.Gates {
			fmt.Fprintf(w, "    gate       %s\n", g)
		}
	}
}

// textDataset names a real-text dataset with its hub path; random, the
// usual one, is left out.
func textDataset(name string) string {
	if d, ok := workloads.RealTextDatasets[name]; ok {
		return name + " (" + d.Path + ")"
	}
	return ""
}
